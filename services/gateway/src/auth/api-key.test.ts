import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { TokenStatus, UserStatus } from '@gateway/contracts';
import { InvalidationFeed, issueApiKey, type Store } from '@gateway/store';
import { useTestStore, type TestRedis, type TestStore } from '@gateway/testkit';
import { ApiKeyAuth } from './api-key.ts';

let db: TestStore;
let server: TestRedis;
let redis: Redis;
let store: Store;
let auth: ApiKeyAuth;
let feed: InvalidationFeed;

beforeAll(async () => {
  db = await useTestStore();
  ({ server, redis, store } = db);
  feed = InvalidationFeed.beside(redis, 'test-invalidations');
  auth = new ApiKeyAuth({ tokens: store.tokens, users: store.users, feed });
  await feed.start();
});
afterAll(async () => {
  feed.close();
  await db.close();
});

let seq = 0;
async function newKey(fields: { models?: string[]; expired_time?: number } = {}) {
  const user = await store.users.create({ username: `k${++seq}`, password_hash: 'x', group: 'vip' });
  const { key, issued } = issueApiKey();
  const { token } = await store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true, ...fields }, issued);
  return { user, token, key };
}
const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

describe('API-key authentication', () => {
  it('resolves a key to its holder, from the cache after the first lookup', async () => {
    const { user, token, key } = await newKey();
    expect(await auth.authenticate(bearer(key))).toEqual({
      tokenId: token.id, tokenName: token.name, userId: user.id, group: 'vip', models: 'all', rpmLimit: 0, userRpmLimit: 0, priority: 'interactive',
      keyInFlightCap: 0, userInFlightCap: 0, quotaLimited: false, budgetLimited: false,
    });
    // Served from memory: no more reads of the token or user records.
    const hgetall = redis.hgetall.bind(redis);
    let reads = 0;
    redis.hgetall = ((...args: Parameters<typeof hgetall>) => { reads++; return hgetall(...args); }) as typeof redis.hgetall;
    for (let i = 0; i < 100; i++) await auth.authenticate(bearer(key));
    redis.hgetall = hgetall;
    expect(reads).toBe(0);
  });

  it('answers a key whose lookup was in flight when the cache was cleared (a token or user changed): read again, never an error', async () => {
    const { token, key } = await newKey();
    // Three requests on one lookup (only the first is told of the abort by the cache), and an unknown key.
    const looking = [...Array.from({ length: 3 }, () => auth.authenticate(bearer(key))), auth.authenticate(bearer('sk-not-a-key')).then(() => 'ok', (e: { status?: number }) => e.status)];
    auth.clear();
    const answers = await Promise.all(looking);
    expect(answers.slice(0, 3).map((h) => (h as { tokenId: number }).tokenId)).toEqual([token.id, token.id, token.id]);
    expect(answers[3]).toBe(401);
  });

  it('looks a key up once when many requests bring it at the same moment', async () => {
    const { token, key } = await newKey();
    const hgetall = redis.hgetall.bind(redis);
    let reads = 0;
    redis.hgetall = ((...args: Parameters<typeof hgetall>) => { reads++; return hgetall(...args); }) as typeof redis.hgetall;
    const holders = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(bearer(key))));
    redis.hgetall = hgetall;
    expect(holders.every((h) => h.tokenId === token.id)).toBe(true);
    // One lookup: the token record and its user's, not 50 of each.
    expect(reads).toBe(2);
  });

  it('refuses missing, malformed, unknown and query-string keys with 401 invalid_api_key', async () => {
    const { key } = await newKey();
    await expect(auth.authenticate({ headers: {} })).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(auth.authenticate({ headers: { authorization: key } })).rejects.toMatchObject({ status: 401 });
    await expect(auth.authenticate(bearer('sk-not-a-real-key'))).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(auth.authenticate({ ...bearer(key), query: { key } })).rejects.toMatchObject({ status: 401, message: expect.stringContaining('header') });
  });

  it('takes x-goog-api-key only where asked to', async () => {
    const { key } = await newKey();
    await expect(auth.authenticate({ headers: { 'x-goog-api-key': key } })).rejects.toMatchObject({ status: 401 });
    await expect(auth.authenticate({ headers: { 'x-goog-api-key': key }, googleHeader: true })).resolves.toMatchObject({ models: 'all' });
  });

  it('stops a disabled or deleted key, and a disabled user, as soon as the change is announced', async () => {
    const a = await newKey();
    await auth.authenticate(bearer(a.key));
    await store.tokens.update(a.token.id, { status: TokenStatus.disabled });
    await expect.poll(() => auth.authenticate(bearer(a.key)).then(() => 'ok', (e) => e.status), { timeout: 1000, interval: 5 }).toBe(401);

    const b = await newKey();
    await auth.authenticate(bearer(b.key));
    await store.tokens.delete(b.token.id);
    await expect.poll(() => auth.authenticate(bearer(b.key)).then(() => 'ok', (e) => e.status), { timeout: 1000, interval: 5 }).toBe(401);

    const c = await newKey();
    await auth.authenticate(bearer(c.key));
    await store.users.update(c.user.id, { status: UserStatus.disabled });
    await expect.poll(() => auth.authenticate(bearer(c.key)).then(() => 'ok', (e) => e.message), { timeout: 1000, interval: 5 }).toContain('user is disabled');
  });

  it('refuses an expired key', async () => {
    const { key } = await newKey({ expired_time: Math.floor(Date.now() / 1000) - 1 });
    await expect(auth.authenticate(bearer(key))).rejects.toMatchObject({ status: 401, message: expect.stringContaining('expired') });
  });

  it('allows only the models a limited key names (403 otherwise)', async () => {
    const { key } = await newKey({ models: ['allowed'] });
    const holder = await auth.authenticate(bearer(key));
    expect(() => auth.authorizeModel(holder, 'allowed')).not.toThrow();
    expect(() => auth.authorizeModel(holder, 'other')).toThrow(expect.objectContaining({ status: 403 }));
  });
});
