import type { Redis } from 'ioredis';
import { conflict, notFound, type Page, type User } from '@gateway/contracts';
import { decodeFields, encodeFields, nowSeconds, readRecords, type Codec } from './codec.ts';
import { keys } from './keys.ts';
import { writeRecord, withRetry } from './record-write.ts';
import { sameDigest, sha256 } from './secrets.ts';

/** A user as stored, with the secrets that never leave the store's callers. */
export interface StoredUser extends User {
  password_hash: string;
  access_token_hash: string;
}

const codec: Codec<StoredUser> = {
  id: 'int', username: 'string', display_name: 'string', role: 'int', status: 'int', quota: 'int',
  used_quota: 'int', request_count: 'int', group: 'string', created_time: 'int',
  password_hash: 'string', access_token_hash: 'string',
};

export type NewUser = Pick<StoredUser, 'username' | 'password_hash'> & Partial<Pick<User, 'display_name' | 'role' | 'quota' | 'group' | 'status'>>;
export type UserChanges = Partial<Pick<StoredUser, 'username' | 'password_hash' | 'display_name' | 'role' | 'status' | 'quota' | 'group'>>;

/** The public view of a user: no password hash, no access token hash. */
export function publicUser(user: StoredUser): User {
  const { password_hash: _p, access_token_hash: _a, ...rest } = user;
  return rest;
}

export class UserStore {
  private readonly redis: Redis;
  constructor(redis: Redis) {
    this.redis = redis;
  }

  async create(input: NewUser): Promise<StoredUser> {
    const record: Partial<StoredUser> = {
      display_name: input.username, role: 1, status: 1, quota: 0, group: 'default', ...input,
      used_quota: 0, request_count: 0, created_time: nowSeconds(), access_token_hash: '',
    };
    const result = await writeRecord(this.redis, {
      create: { seq: keys.userSeq, prefix: keys.userPrefix },
      unique: [{ key: keys.usernameIndex, field: input.username }],
      set: encodeFields(codec, record),
      index: [
        { op: 'hset', key: keys.usernameIndex, field: input.username, value: '$id' },
        { op: 'zadd', key: keys.users },
      ],
    });
    if (!result.ok) throw conflict(`username "${input.username}" is already taken`);
    return (await this.get(result.id))!;
  }

  async get(id: number): Promise<StoredUser | null> {
    const hash = await this.redis.hgetall(keys.user(id));
    return hash.id ? decodeFields(codec, hash) : null;
  }

  async findByUsername(username: string): Promise<StoredUser | null> {
    const id = await this.redis.hget(keys.usernameIndex, username);
    return id ? this.get(Number(id)) : null;
  }

  async update(id: number, changes: UserChanges): Promise<StoredUser> {
    const updated = await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      const renamed = changes.username !== undefined && changes.username !== current.username;
      const result = await writeRecord(this.redis, {
        key: keys.user(id),
        id: String(id),
        expect: { username: current.username },
        unique: renamed ? [{ key: keys.usernameIndex, field: changes.username! }] : [],
        set: encodeFields(codec, changes),
        index: renamed
          ? [
              { op: 'hdel', key: keys.usernameIndex, field: current.username },
              { op: 'hset', key: keys.usernameIndex, field: changes.username!, value: '$id' },
            ]
          : [],
      });
      if (result.ok) return (await this.get(id))!;
      if (result.reason === 'stale') return 'stale';
      if (result.reason === 'not_found') throw notFound(`no user with id ${id}`);
      throw conflict(`username "${changes.username}" is already taken`);
    });
    // API-key caches hold the user's status and group.
    await this.redis.publish(keys.invalidations, `user:${id}`);
    return updated;
  }

  async delete(id: number): Promise<void> {
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      const index: NonNullable<Parameters<typeof writeRecord>[1]['index']> = [
        { op: 'hdel', key: keys.usernameIndex, field: current.username },
        { op: 'zrem', key: keys.users },
      ];
      if (current.access_token_hash) index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.access_token_hash });
      const result = await writeRecord(this.redis, {
        key: keys.user(id), id: String(id), delete: true,
        expect: { username: current.username, access_token_hash: current.access_token_hash },
        index,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no user with id ${id}`);
    });
    await this.redis.publish(keys.invalidations, `user:${id}`);
  }

  /** Replaces the user's access token; the previous one stops working at once. */
  async setAccessToken(id: number, token: string): Promise<void> {
    const hash = sha256(token);
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current) throw notFound(`no user with id ${id}`);
      const index: NonNullable<Parameters<typeof writeRecord>[1]['index']> = [];
      if (current.access_token_hash) index.push({ op: 'hdel', key: keys.accessTokenIndex, field: current.access_token_hash });
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

  /** The user an access token belongs to, if the token is current. */
  async findByAccessToken(token: string): Promise<StoredUser | null> {
    const hash = sha256(token);
    const id = await this.redis.hget(keys.accessTokenIndex, hash);
    if (!id) return null;
    const user = await this.get(Number(id));
    if (!user || !sameDigest(user.access_token_hash, hash)) return null;
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

  private getMany(ids: string[]): Promise<StoredUser[]> {
    return readRecords(this.redis, keys.user, ids, (hash) => decodeFields(codec, hash));
  }
}
