import { describe, expect } from 'vitest';
import { storeTest } from '@gateway/testkit/fixtures';
import { UserBodyBudget } from './user-body-budget.ts';

const test = storeTest();
const KIB = 1024;
const MIB = KIB * KIB;
const heldIn = async (redis: { hgetall(key: string): Promise<Record<string, string>> }, userId: number) =>
  Object.entries(await redis.hgetall(`gw:body:{${userId}}`)).reduce((sum, [field, v]) => (field.endsWith(':t') ? sum : sum + Number(v)), 0);
/** Scripts Redis has run so far: each ask for a lease is one. */
const scriptsRun = async (redis: { info(section: string): Promise<string> }) => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);

describe("a user's body budget shared by processes", () => {
  test('two processes (a gateway, a batch worker) share one limit; takes sent at once never pass it together', async ({ db }) => {
    const gateway = new UserBodyBudget(db.redis, 'gateway-a', { idleMs: 200 });
    const batches = new UserBodyBudget(db.redis, 'batch-worker-b', { idleMs: 200 });
    try {
      expect(await batches.take(7, 600 * KIB, MIB)).toBeUndefined();
      // The gateway's take sees the batch worker's lease (its 600 KiB and a slice): refused, with what is held.
      expect(await gateway.take(7, 500 * KIB, MIB)).toBe(batches.leasedBy(7));
      expect(batches.leasedBy(7)).toBeGreaterThanOrEqual(600 * KIB);
      batches.give(7, 600 * KIB);
      // Given back to Redis once the batch worker's lease has been idle a while.
      await expect.poll(() => heldIn(db.redis, 7)).toBe(0);
      expect(await gateway.take(7, 500 * KIB, MIB)).toBeUndefined();
      gateway.give(7, 500 * KIB);
      // 40 takes of 100 KiB at once from each: never past the limit together; near it, the
      // others' slices are what is left, so at most a take's worth less than the limit is taken.
      const answers = await Promise.all(Array.from({ length: 80 }, (_, i) => (i % 2 ? gateway : batches).take(7, 100 * KIB, MIB)));
      const taken = answers.filter((a) => a === undefined).length;
      expect(taken).toBeGreaterThanOrEqual(9);
      expect(taken).toBeLessThanOrEqual(10);
      expect(gateway.heldBy(7) + batches.heldBy(7)).toBe(taken * 100 * KIB);
      // What Redis counts is the two leases, within the limit.
      await expect.poll(() => heldIn(db.redis, 7)).toBe(gateway.leasedBy(7) + batches.leasedBy(7));
      expect(await heldIn(db.redis, 7)).toBeLessThanOrEqual(MIB);
      // Forced (bytes already in Redis), past the limit.
      expect(await batches.take(7, 100 * KIB, MIB, true)).toBeUndefined();
      await batches.close();
      await expect.poll(() => heldIn(db.redis, 7)).toBe(gateway.leasedBy(7));
    } finally {
      await gateway.close();
      await batches.close();
    }
  });

  test('small takes are served from the lease without Redis, and an idle lease goes back', async ({ db }) => {
    const gateway = new UserBodyBudget(db.redis, 'gateway-lease', { idleMs: 300 });
    try {
      expect(await gateway.take(9, 100, MIB)).toBeUndefined();
      const before = await scriptsRun(db.redis);
      for (let i = 0; i < 200; i++) {
        expect(await gateway.take(9, 100, MIB)).toBeUndefined();
        if (i % 2) gateway.give(9, 200);
      }
      expect(await scriptsRun(db.redis)).toBe(before);
      expect(gateway.heldBy(9)).toBe(100);
      // A lease of a sixteenth of the limit, within it.
      expect(await heldIn(db.redis, 9)).toBe(100 + MIB / 16);
      // A take its lease cannot hold asks Redis once.
      expect(await gateway.take(9, MIB / 8, MIB)).toBeUndefined();
      expect(await scriptsRun(db.redis)).toBe(before + 1);
      // Idle: the lease shrinks to what is in use, and goes when nothing is.
      await expect.poll(() => heldIn(db.redis, 9)).toBe(100 + MIB / 8);
      gateway.give(9, 100 + MIB / 8);
      await expect.poll(() => db.redis.exists('gw:body:{9}')).toBe(0);
      expect(gateway.leasedBy(9)).toBe(0);
    } finally {
      await gateway.close();
    }
  });

  test("a process that died holding bytes stops counting when its field's time is up", async ({ db }) => {
    const budget = new UserBodyBudget(db.redis, 'gateway-live');
    try {
      // A holder that stopped renewing: its field's time is past.
      await db.redis.hset('gw:body:{8}', 'gateway-dead', 900 * KIB, 'gateway-dead:t', Date.now() - 1);
      expect(await budget.take(8, 500 * KIB, MIB)).toBeUndefined();
      expect(await db.redis.hexists('gw:body:{8}', 'gateway-dead')).toBe(0);
      // One still within its time counts, for a take past this process's lease.
      await db.redis.hset('gw:body:{8}', 'gateway-alive', 900 * KIB, 'gateway-alive:t', Date.now() + 30_000);
      expect(await budget.take(8, 200 * KIB, MIB)).toBe(1400 * KIB);
    } finally {
      await budget.close();
    }
  });
});
