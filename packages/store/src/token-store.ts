import type { RedisClient as Redis } from '@gateway/config';
import { budgetAsOf, conflict, notFound, type Page, type Token } from '@gateway/contracts';
import { decodeFields, encodeFields, nowSeconds, readRecords, type Codec } from './codec.ts';
import { keys } from './keys.ts';
import { alreadyWritten, writeRecord, withRetry, type WriteOnce } from './record-write.ts';
import { sameDigest, sha256, type IssuedKey } from './secrets.ts';
import { publishChange } from './change-messages.ts';

/** A token as stored: the key only as its hash and a masked preview. */
export interface StoredToken extends Omit<Token, 'key'> {
  key_hash: string;
  key_preview: string;
}

const codec: Codec<StoredToken> = {
  id: 'int', user_id: 'int', name: 'string', key_hash: 'string', key_preview: 'string', status: 'int',
  remain_quota: 'int', unlimited_quota: 'bool', used_quota: 'int', expired_time: 'int', models: 'json',
  rpm_limit: 'int', priority: 'string', max_in_flight: 'int', created_time: 'int', accessed_time: 'int',
  max_budget: 'usd', budget_duration: 'string', spend: 'usd', budget_spend: 'usd', budget_period: 'int',
};

export type NewToken = Pick<Token, 'user_id' | 'name'> &
  Partial<Pick<Token, 'remain_quota' | 'unlimited_quota' | 'expired_time' | 'models' | 'rpm_limit' | 'priority' | 'max_in_flight' | 'max_budget' | 'budget_duration'>>;
export type TokenChanges = Partial<Pick<Token, 'name' | 'status' | 'remain_quota' | 'unlimited_quota' | 'expired_time' | 'models' | 'rpm_limit' | 'priority' | 'max_in_flight' | 'max_budget' | 'budget_duration'>>;

export function publicToken(token: StoredToken): Token {
  const { key_hash: _h, key_preview, ...rest } = token;
  return budgetAsOf({ ...rest, key: key_preview });
}

function decodeToken(hash: Record<string, string>): StoredToken {
  const token = decodeFields(codec, hash);
  token.models ??= [];
  token.priority ||= 'interactive';
  return token;
}

export class TokenStore {
  private readonly redis: Redis;
  constructor(redis: Redis) {
    this.redis = redis;
  }

  /**
   * Records a key issued by the caller (`issueApiKey`, in the gateway): only its digest and
   * preview reach the store, never the key.
   * `maxKeys`: the user's key count this one may not pass (checked in the same atomic write, so
   * keys created in parallel cannot pass it either); 409 past it. `once`: the job making it, so that
   * a job run again after its worker died gets its key's record back, not a second key.
   */
  async create(input: NewToken, issued: IssuedKey, maxKeys?: number, once?: WriteOnce): Promise<{ token: StoredToken }> {
    const keyHash = issued.key_hash;
    const record: Partial<StoredToken> = {
      remain_quota: 0, unlimited_quota: false, expired_time: -1, models: [], rpm_limit: 0, priority: 'interactive', max_in_flight: 0,
      ...input,
      key_hash: keyHash, key_preview: issued.key_preview, status: 1, used_quota: 0,
      created_time: nowSeconds(), accessed_time: 0,
    };
    const result = await writeRecord(this.redis, {
      create: { seq: keys.tokenSeq, prefix: keys.tokenPrefix },
      unique: [{ key: keys.tokenKeyIndex, field: keyHash }],
      ...(maxKeys === undefined ? {} : { limit: { key: keys.userTokens(input.user_id), max: maxKeys } }),
      set: encodeFields(codec, record),
      index: [
        { op: 'hset', key: keys.tokenKeyIndex, field: keyHash, value: '$id' },
        { op: 'zadd', key: keys.tokens },
        { op: 'sadd', key: keys.userTokens(input.user_id), value: '$id' },
      ],
      // Run again after its worker died, the job gets its key's record back, not a conflict.
      once,
    });
    if (!result.ok && result.reason === 'limit') throw conflict(`this user already holds ${maxKeys} API keys, its most: delete one, or ask an administrator to raise its max_keys`);
    if (!result.ok) throw new Error(`token create failed: ${result.reason}`);
    return { token: (await this.get(result.id))! };
  }

  async get(id: number): Promise<StoredToken | null> {
    const hash = await this.redis.hgetall(keys.token(id));
    return hash.id ? decodeToken(hash) : null;
  }

  /** The token a full API key belongs to. */
  async findByKey(key: string): Promise<StoredToken | null> {
    const hash = sha256(key);
    const id = await this.redis.hget(keys.tokenKeyIndex, hash);
    if (!id) return null;
    const token = await this.get(Number(id));
    if (!token || !sameDigest(token.key_hash, hash)) return null;
    return token;
  }

  /**
   * Changes a key's fields. With `allowed`, the change is checked against the key as it is when
   * written, not as it was read: `allowed` sees the key, and the write is refused (then read,
   * checked and tried again) if any field it changes was changed meanwhile. A user's "only
   * tighten" check read the key, an administrator's tightening landed, and the user's write then
   * put the old value back (1 to 2 times in 8 in a race of four users' loops against one change).
   */
  async update(id: number, changes: TokenChanges, allowed?: (current: StoredToken) => void): Promise<StoredToken> {
    const set = encodeFields(codec, changes);
    await withRetry(async () => {
      let expect: Record<string, string> | undefined;
      if (allowed) {
        const hash = await this.redis.hgetall(keys.token(id));
        if (!hash.id) throw notFound(`no token with id ${id}`);
        allowed(decodeToken(hash));
        expect = Object.fromEntries(Object.keys(set).map((field) => [field, hash[field] ?? '']));
      }
      const result = await writeRecord(this.redis, { key: keys.token(id), id: String(id), expect, set });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no token with id ${id}`);
    });
    await publishChange(this.redis, { kind: 'token', id: Number(id) });
    return (await this.get(id))!;
  }

  async delete(id: number, once?: WriteOnce): Promise<void> {
    await withRetry(async () => {
      const current = await this.get(id);
      if (!current && (await alreadyWritten(this.redis, once))) return true;
      if (!current) throw notFound(`no token with id ${id}`);
      const result = await writeRecord(this.redis, {
        key: keys.token(id), id: String(id), delete: true, expect: { key_hash: current.key_hash },
        index: [
          { op: 'hdel', key: keys.tokenKeyIndex, field: current.key_hash },
          { op: 'zrem', key: keys.tokens },
          { op: 'srem', key: keys.userTokens(current.user_id), value: '$id' },
        ],
        once,
      });
      if (result.ok) return true;
      if (result.reason === 'stale') return 'stale';
      throw notFound(`no token with id ${id}`);
    });
    await publishChange(this.redis, { kind: 'token', id: Number(id) });
  }

  async listByUser(userId: number, page: number, pageSize: number): Promise<Page<StoredToken>> {
    const ids = (await this.redis.smembers(keys.userTokens(userId))).sort((a, b) => Number(a) - Number(b));
    const slice = ids.slice((page - 1) * pageSize, page * pageSize);
    return { items: await this.getMany(slice), total: ids.length, page, page_size: pageSize };
  }

  async idsOfUser(userId: number): Promise<number[]> {
    return (await this.redis.smembers(keys.userTokens(userId))).map(Number);
  }

  private getMany(ids: string[]): Promise<StoredToken[]> {
    return readRecords(this.redis, keys.token, ids, decodeToken);
  }
}
