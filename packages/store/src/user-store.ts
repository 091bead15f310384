import type { RedisClient as Redis } from '@gateway/config';
import { budgetAsOf, notFound, usernameKey, DEFAULT_MAX_KEYS, Role, UserStatus, type Page, type User } from '@gateway/contracts';
import { decodeFields, encodeFields, nowSeconds, readRecords, type Codec } from './codec.ts';
import { keys } from './keys.ts';
import { alreadyWritten, writeRecord, withRetry, type WriteOnce } from './record-write.ts';
import { indexSkeletons, nameConflict, nameForCreate, nameForDelete, nameForRename } from './username-index.ts';
import { sameDigest, sha256 } from './secrets.ts';
import { publishChange } from './change-messages.ts';

/** A user as stored, with the secrets that never leave the store's callers. */
export interface StoredUser extends User {
  password_hash: string;
  /** The access token from the last login (its SHA-256); '' when revoked. */
  access_token_hash: string;
  /** Root only: ADMIN_TOKEN from the environment (its SHA-256), valid for as long as it is set. */
  env_token_hash: string;
  /** Bumped when the credentials change (new password, disabled): older dashboard sessions end. */
  session_epoch: number;
}

const codec: Codec<StoredUser> = {
  id: 'int', username: 'string', display_name: 'string', role: 'int', status: 'int', quota: 'int',
  used_quota: 'int', request_count: 'int', group: 'string', created_time: 'int',
  password_hash: 'string', access_token_hash: 'string', env_token_hash: 'string', session_epoch: 'int',
  rpm_limit: 'int', models: 'json', priority: 'string', max_keys: 'int', max_in_flight: 'int',
  max_budget: 'usd', budget_duration: 'string', spend: 'usd', budget_spend: 'usd', budget_period: 'int',
};

/** The limits an administrator sets on a user (they bind every key of the user). */
type UserLimits = Pick<User, 'rpm_limit' | 'models' | 'priority' | 'max_keys' | 'max_in_flight' | 'max_budget' | 'budget_duration'>;

type IndexChanges = NonNullable<Parameters<typeof writeRecord>[1]['index']>;

export type NewUser = Pick<StoredUser, 'username' | 'password_hash'> & Partial<Pick<User, 'display_name' | 'role' | 'quota' | 'group' | 'status'> & UserLimits>;
export type UserChanges = Partial<Pick<StoredUser, 'username' | 'password_hash' | 'display_name' | 'role' | 'status' | 'quota' | 'group'> & UserLimits>;

/** The public view of a user: no password hash, no access token hash. */
export function publicUser(user: StoredUser): User {
  const { password_hash: _p, access_token_hash: _a, env_token_hash: _e, session_epoch: _s, ...rest } = user;
  return budgetAsOf(rest);
}

export class UserStore {
  private readonly redis: Redis;
  constructor(redis: Redis) {
    this.redis = redis;
  }

  /**
   * `once`: the job making it, so that a job run again after its worker died makes no second user
   * (nor a 409). `idAbove`: the highest id that still owns rows elsewhere (PostgreSQL's files,
   * batches and log), which a new user must never be given.
   */
  async create(input: NewUser, once?: WriteOnce, idAbove?: number): Promise<StoredUser> {
    const record: Partial<StoredUser> = {
      display_name: input.username, role: Role.common, status: UserStatus.enabled, quota: 0, group: 'default',
      rpm_limit: 0, models: [], priority: 'interactive', max_keys: DEFAULT_MAX_KEYS, max_in_flight: 0, ...input,
      used_quota: 0, request_count: 0, created_time: nowSeconds(), access_token_hash: '', env_token_hash: '', session_epoch: 0,
    };
    const name = nameForCreate(input.username);
    const result = await writeRecord(this.redis, {
      create: { seq: keys.userSeq, prefix: keys.userPrefix, ...(idAbove ? { above: idAbove } : {}) },
      unique: name.unique,
      set: encodeFields(codec, record),
      index: [...name.index, { op: 'zadd', key: keys.users }],
      once,
    });
    if (!result.ok) throw await nameConflict(this.redis, input.username);
    return (await this.get(result.id))!;
  }

  /** Indexes the confusable skeletons of users written before that index existed (at start-up). */
  async indexSkeletons(): Promise<number> {
    return indexSkeletons(this.redis, await this.getMany(await this.redis.zrange(keys.users, 0, -1)));
  }

  async get(id: number): Promise<StoredUser | null> {
    const hash = await this.redis.hgetall(keys.user(id));
    return hash.id ? decodeUser(hash) : null;
  }

  /** The user with this name, whatever its case or Unicode form. */
  async findByUsername(username: string): Promise<StoredUser | null> {
    const id = await this.redis.hget(keys.usernameIndex, usernameKey(username));
    return id ? this.get(Number(id)) : null;
  }

  /**
   * Applies the changes atomically. A new password, or disabling the user, also revokes its
   * access token and ends its dashboard sessions, in the same write (ADMIN_TOKEN stays valid
   * for as long as the environment sets it).
   */
  async update(id: number, changes: UserChanges, once?: WriteOnce): Promise<StoredUser> {
    const updated = await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      // A new spelling, even of the same name (`alice` to `ALICE`), may have other skeletons.
      const name = changes.username === undefined ? { unique: [], index: [] } : nameForRename(current.username, changes.username);
      const index: IndexChanges = [...name.index];
      const set = encodeFields(codec, changes);
      const revoke = changes.password_hash !== undefined || (changes.status !== undefined && changes.status !== 1 && current.status === 1);
      if (revoke) {
        set.access_token_hash = '';
        set.session_epoch = String(current.session_epoch + 1);
        if (current.access_token_hash && current.access_token_hash !== current.env_token_hash) {
          index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.access_token_hash });
        }
      }
      const result = await writeRecord(this.redis, {
        key: keys.user(id),
        id: String(id),
        expect: { username: current.username, access_token_hash: current.access_token_hash },
        unique: name.unique,
        set,
        index,
        // A new password bumps session_epoch: run twice, it would end sessions opened in between.
        once,
      });
      if (result.ok) return (await this.get(id))!;
      if (result.reason === 'stale') return 'stale';
      if (result.reason === 'not_found') throw notFound(`no user with id ${id}`);
      throw await nameConflict(this.redis, changes.username!);
    });
    // API-key caches hold the user's status and group.
    await publishChange(this.redis, { kind: 'user', id: Number(id) });
    return updated;
  }

  async delete(id: number, once?: WriteOnce): Promise<void> {
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current && (await alreadyWritten(this.redis, once))) return true;
      if (!current) throw notFound(`no user with id ${id}`);
      const index: IndexChanges = [
        ...nameForDelete(current.username),
        { op: 'zrem', key: keys.users },
      ];
      if (current.access_token_hash) index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.access_token_hash });
      if (current.env_token_hash) index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.env_token_hash });
      const result = await writeRecord(this.redis, {
        key: keys.user(id), id: String(id), delete: true,
        expect: { username: current.username, access_token_hash: current.access_token_hash },
        index,
        once,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no user with id ${id}`);
    });
    await publishChange(this.redis, { kind: 'user', id: Number(id) });
  }

  /** Replaces the user's access token; the previous one stops working at once. */
  async setAccessToken(id: number, token: string): Promise<void> {
    await this.setAccessTokenHash(id, sha256(token));
  }

  /** The same, given only the new token's SHA-256 (the token made and kept by the gateway). */
  async setAccessTokenHash(id: number, hash: string): Promise<void> {
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      const index: IndexChanges = [];
      // The environment's token shares the index; a login never unsets it.
      if (current.access_token_hash && current.access_token_hash !== current.env_token_hash) {
        index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.access_token_hash });
      }
      index.push({ op: 'hset', key: keys.accessTokenIndex, field: hash, value: '$id' });
      const result = await writeRecord(this.redis, {
        key: keys.user(id), id: String(id),
        expect: { access_token_hash: current.access_token_hash },
        set: { access_token_hash: hash },
        index,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no user with id ${id}`);
    });
  }

  /**
   * Makes `token` (ADMIN_TOKEN) a credential of the user beside its login token, or with null
   * removes the one set before. A login or a new password leaves it alone.
   */
  async setEnvToken(id: number, token: string | null): Promise<void> {
    const hash = token === null ? '' : sha256(token);
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      const set: Record<string, string> = { env_token_hash: hash };
      const index: IndexChanges = [];
      // ADMIN_TOKEN may also be the login token (the one printed when root was made, exported
      // as the banner once said): that one stays, however ADMIN_TOKEN changes, until a sign-in
      // replaces it. Before, it was made the environment's alone, and a start without
      // ADMIN_TOKEN revoked the printed token.
      if (current.env_token_hash && current.env_token_hash !== hash && current.env_token_hash !== current.access_token_hash) {
        index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.env_token_hash });
      }
      // Set every time, so an index entry lost by an older version's revocation comes back.
      if (hash) index.push({ op: 'hset', key: keys.accessTokenIndex, field: hash, value: '$id' });
      const result = await writeRecord(this.redis, {
        key: keys.user(id), id: String(id),
        expect: { env_token_hash: current.env_token_hash, access_token_hash: current.access_token_hash },
        set,
        index,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no user with id ${id}`);
    });
  }

  /** The user an access token belongs to, if the token is current (its last login's, or ADMIN_TOKEN). */
  async findByAccessToken(token: string): Promise<StoredUser | null> {
    const hash = sha256(token);
    const id = await this.redis.hget(keys.accessTokenIndex, hash);
    if (!id) return null;
    const user = await this.get(Number(id));
    if (!user || !(sameDigest(user.access_token_hash, hash) || sameDigest(user.env_token_hash, hash))) return null;
    return user;
  }

  async list(page: number, pageSize: number, keyword?: string): Promise<Page<StoredUser>> {
    if (!keyword) {
      const total = await this.redis.zcard(keys.users);
      const ids = await this.redis.zrange(keys.users, (page - 1) * pageSize, page * pageSize - 1);
      return { items: await this.getMany(ids), total, page, page_size: pageSize };
    }
    const all = await this.getMany(await this.redis.zrange(keys.users, 0, -1));
    const needle = keyword.toLowerCase();
    const matches = all.filter(
      (u) => u.username.toLowerCase().includes(needle) || u.display_name.toLowerCase().includes(needle) || String(u.id) === keyword,
    );
    return { items: matches.slice((page - 1) * pageSize, page * pageSize), total: matches.length, page, page_size: pageSize };
  }

  /** Users' names by id, read in one round trip; a user deleted since is not in the map. */
  async usernames(ids: readonly number[]): Promise<Map<number, string>> {
    const users = await this.getMany([...new Set(ids)].map(String));
    return new Map(users.map((user) => [user.id, user.username]));
  }

  private getMany(ids: string[]): Promise<StoredUser[]> {
    return readRecords(this.redis, keys.user, ids, decodeUser);
  }
}

/** Records written before a field existed read as its empty value. */
function decodeUser(hash: Record<string, string>): StoredUser {
  const user = decodeFields(codec, hash);
  user.models ??= [];
  user.priority ||= 'interactive';
  if (hash.max_keys === undefined) user.max_keys = DEFAULT_MAX_KEYS;
  user.env_token_hash ??= '';
  user.session_epoch ??= 0;
  user.access_token_hash ??= '';
  return user;
}
