import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { issueApiKey, keys, type Store } from '@gateway/store';
import { useTestStore, type TestRedis, type TestStore } from '@gateway/testkit';
import { UsageLedger } from './usage-ledger.ts';
import { routingKeys } from './routing-keys.ts';

let db: TestStore;
let server: TestRedis;
let redis: Redis;
let store: Store;
let ledger: UsageLedger;

beforeAll(async () => {
  db = await useTestStore();
  ({ server, redis, store } = db);
  ledger = new UsageLedger(redis);
});
afterAll(async () => {
  await db.close();
});

let n = 0;
async function setup(token: { remain_quota?: number; unlimited_quota?: boolean } = {}, userQuota = 0) {
  const user = await store.users.create({ username: `u${++n}`, password_hash: 'x', quota: userQuota });
  const { token: t } = await store.tokens.create({ user_id: user.id, name: 't', ...token }, issueApiKey().issued);
  const channel = await store.channels.create({ name: 'c', type: 'openai', key: 'sk-k', base_url: 'http://u', models: ['m'] });
  return { caller: { tokenId: t.id, userId: user.id, group: 'default' }, channel };
}

describe('usage ledger', () => {
  it('charges the key, the user and the channel at the next flush, and resets channel health', async () => {
    const { caller, channel } = await setup({ remain_quota: 100 });
    await redis.hset(routingKeys.health(channel.id), 'failures', '2');
    ledger.charge({ caller, channelId: channel.id, usage: { totalTokens: 30 }, responseTimeMs: 123.4 });
    expect((await store.tokens.get(caller.tokenId))!.used_quota).toBe(0);
    await ledger.flush();
    const token = (await store.tokens.get(caller.tokenId))!;
    const user = (await store.users.get(caller.userId))!;
    const stored = (await store.channels.get(channel.id))!;
    expect([token.used_quota, token.remain_quota]).toEqual([30, 70]);
    expect(token.accessed_time).toBeGreaterThan(0);
    expect([user.used_quota, user.request_count]).toEqual([30, 1]);
    expect([stored.used_quota, stored.response_time]).toEqual([30, 123]);
    expect(await redis.exists(routingKeys.health(channel.id))).toBe(0);
  });

  it('leaves an unlimited key\'s remain_quota alone', async () => {
    const { caller, channel } = await setup({ unlimited_quota: true, remain_quota: 5 });
    ledger.charge({ caller, channelId: channel.id, usage: { totalTokens: 50 }, responseTimeMs: 1 });
    await ledger.flush();
    const token = (await store.tokens.get(caller.tokenId))!;
    expect([token.used_quota, token.remain_quota]).toEqual([50, 5]);
    await expect(ledger.assertQuota(caller)).resolves.toBeUndefined();
  });

  it('refuses a key or a user out of quota with 429 insufficient_quota, not retryable, counting charges not yet written', async () => {
    const key = await setup({ remain_quota: 10 });
    await ledger.assertQuota(key.caller);
    ledger.charge({ caller: key.caller, channelId: key.channel.id, usage: { totalTokens: 10 }, responseTimeMs: 1 });
    await expect(ledger.assertQuota(key.caller)).rejects.toMatchObject({ status: 429, code: 'insufficient_quota', shouldRetry: false });

    const user = await setup({ unlimited_quota: true }, 20);
    ledger.charge({ caller: user.caller, channelId: user.channel.id, usage: { totalTokens: 19 }, responseTimeMs: 1 });
    await ledger.assertQuota(user.caller);
    ledger.charge({ caller: user.caller, channelId: user.channel.id, usage: { totalTokens: 1 }, responseTimeMs: 1 });
    await expect(ledger.assertQuota(user.caller)).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
    // And once written, from Redis alone (another worker's view).
    await ledger.flush();
    const elsewhere = new UsageLedger(redis);
    await expect(elsewhere.assertQuota(key.caller)).rejects.toMatchObject({ status: 429 });
    await expect(elsewhere.assertQuota(user.caller)).rejects.toMatchObject({ status: 429 });
  });

  it('writes a flush of many charges with one script per record, by itself within flushMs', async () => {
    const { caller, channel } = await setup({ remain_quota: 100_000 });
    const timed = new UsageLedger(redis, { flushMs: 50 });
    await redis.config('RESETSTAT');
    for (let i = 0; i < 100; i++) timed.charge({ caller, channelId: channel.id, usage: { totalTokens: 2 }, responseTimeMs: i });
    await expect.poll(async () => (await store.tokens.get(caller.tokenId))!.used_quota, { timeout: 2000 }).toBe(200);
    const stats = await redis.info('commandstats');
    expect(Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? /cmdstat_eval:calls=(\d+)/.exec(stats)?.[1])).toBeLessThanOrEqual(3);
    expect((await store.users.get(caller.userId))!.request_count).toBe(100);
    expect((await store.channels.get(channel.id))!.response_time).toBe(99);
  });

  it("answers quota checks from its last read for quotaCacheMs, with its own charges taken off, until told of a change", async () => {
    const { caller, channel } = await setup({ remain_quota: 100 });
    const cached = new UsageLedger(redis, { quotaCacheMs: 60_000 });
    await cached.assertQuota(caller);
    await redis.config('RESETSTAT');
    cached.charge({ caller, channelId: channel.id, usage: { totalTokens: 60 }, responseTimeMs: 1 });
    await cached.assertQuota(caller);
    expect(await redis.info('commandstats')).not.toMatch(/cmdstat_hmget/);
    // Its own charges count at once: 100 - 60 - 40 leaves nothing.
    cached.charge({ caller, channelId: channel.id, usage: { totalTokens: 40 }, responseTimeMs: 1 });
    await expect(cached.assertQuota(caller)).rejects.toMatchObject({ status: 429 });
    // An administrator raises the quota: the feed makes the ledger forget what it read.
    await cached.flush();
    await redis.hset(keys.token(caller.tokenId), 'remain_quota', '500');
    cached.forgetQuotas();
    await expect(cached.assertQuota(caller)).resolves.toBeUndefined();
  });

  it('keeps charges through a Redis outage and writes them once it is back', async () => {
    const { caller, channel } = await setup({ remain_quota: 1000 });
    const flaky = new Redis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    await new Promise((r) => flaky.once('ready', r));
    const failures: Error[] = [];
    const outage = new UsageLedger(flaky, { flushMs: 20, onFlushError: (e) => failures.push(e) });
    flaky.disconnect(true); // reconnects by itself a moment later
    outage.charge({ caller, channelId: channel.id, usage: { totalTokens: 9 }, responseTimeMs: 1 });
    await expect.poll(async () => (await store.tokens.get(caller.tokenId))!.used_quota, { timeout: 5000 }).toBe(9);
    expect(failures.length).toBeGreaterThan(0);
    flaky.disconnect();
  });

  it('loses no charge under concurrency, and recreates no deleted record', async () => {
    const { caller, channel } = await setup({ remain_quota: 100_000 });
    await Promise.all(Array.from({ length: 200 }, async (_, i) => {
      ledger.charge({ caller, channelId: channel.id, usage: { totalTokens: 7 }, responseTimeMs: 1 });
      if (i % 7 === 0) await ledger.flush();
    }));
    await ledger.flush();
    expect((await store.tokens.get(caller.tokenId))!.used_quota).toBe(1400);
    expect((await store.users.get(caller.userId))!.request_count).toBe(200);
    expect((await store.channels.get(channel.id))!.used_quota).toBe(1400);

    await store.channels.delete(channel.id);
    ledger.charge({ caller, channelId: channel.id, usage: { totalTokens: 7 }, responseTimeMs: 1 });
    await ledger.flush();
    expect(await redis.exists(keys.channel(channel.id))).toBe(0);
  });
});
