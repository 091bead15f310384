import { describe, expect } from 'vitest';
import { storeTest } from '@gateway/testkit/fixtures';
import { UserBodyBudget } from './user-body-budget.ts';

const test = storeTest();
const KIB = 1024;
const heldIn = async (redis: { hgetall(key: string): Promise<Record<string, string>> }, userId: number) =>
  Object.entries(await redis.hgetall(`gw:body:{${userId}}`)).reduce((sum, [field, v]) => (field.endsWith(':t') ? sum : sum + Number(v)), 0);

describe("a user's body budget shared by processes", () => {
  test('two processes (a gateway, a batch worker) share one limit; takes sent at once never pass it together', async ({ db }) => {
    const gateway = new UserBodyBudget(db.redis, 'gateway-a');
    const batches = new UserBodyBudget(db.redis, 'batch-worker-b');
    try {
      expect(await batches.take(7, 600 * KIB, KIB * KIB)).toBeUndefined();
      // The gateway's take sees the batch worker's bytes: refused, with what is held.
      expect(await gateway.take(7, 500 * KIB, KIB * KIB)).toBe(600 * KIB);
      batches.give(7, 600 * KIB);
      expect(await gateway.take(7, 500 * KIB, KIB * KIB)).toBeUndefined();
      gateway.give(7, 500 * KIB);
      // 40 takes of 100 KiB at once from each: at most the limit is taken, and the count in Redis is what was taken.
      const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? gateway : batches).take(7, 100 * KIB, KIB * KIB)));
      const taken = answers.filter((a) => a === undefined).length;
      expect(taken).toBe(10);
      expect(gateway.heldBy(7) + batches.heldBy(7)).toBe(1000 * KIB);
      await expect.poll(() => heldIn(db.redis, 7)).toBe(1000 * KIB);
      // Forced (bytes already in Redis), past the limit.
      expect(await batches.take(7, 100 * KIB, KIB * KIB, true)).toBeUndefined();
      await batches.close();
      await expect.poll(() => heldIn(db.redis, 7)).toBe(gateway.heldBy(7));
    } finally {
      await gateway.close();
      await batches.close();
    }
  });

  test("a process that died holding bytes stops counting when its field's time is up", async ({ db }) => {
    const budget = new UserBodyBudget(db.redis, 'gateway-live');
    try {
      // A holder that stopped renewing: its field's time is past.
      await db.redis.hset('gw:body:{8}', 'gateway-dead', 900 * KIB, 'gateway-dead:t', Date.now() - 1);
      expect(await budget.take(8, 500 * KIB, KIB * KIB)).toBeUndefined();
      expect(await db.redis.hexists('gw:body:{8}', 'gateway-dead')).toBe(0);
      // One still within its time counts.
      await db.redis.hset('gw:body:{8}', 'gateway-alive', 900 * KIB, 'gateway-alive:t', Date.now() + 30_000);
      expect(await budget.take(8, 100 * KIB, KIB * KIB)).toBe(1400 * KIB);
    } finally {
      await budget.close();
    }
  });
});
