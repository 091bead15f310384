import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { BATCH_RANK_BASE, QueueName } from '@gateway/contracts';
import { FairShares } from './fair-shares.ts';

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await useTestRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

/** Joins `count` jobs of a tenant; resolves with their priorities. */
async function burst(shares: FairShares, queue: QueueName, userId: number, count: number, batch = false, tokenId = userId) {
  const places = [];
  for (let i = 0; i < count; i++) places.push(await shares.join(queue, { userId, tokenId }, batch));
  return places;
}

describe('fair shares of a queue', () => {
  it("ranks another tenant's first job ahead of a hog's backlog, and batch after every interactive job", async () => {
    const shares = new FairShares(redis);
    const queue = QueueName.completion;
    const hog = await burst(shares, queue, 1, 1500);
    expect(hog.map((p) => p.priority).slice(0, 3)).toEqual([1, 2, 3]);
    // A worker takes the hog's first 10.
    for (const place of hog.slice(0, 10)) place.leave();
    await expect.poll(async () => Number(await redis.hget('gw:{fair:completion}:line', 'i:v'))).toBe(9);
    const [steady] = await burst(shares, queue, 2, 1);
    expect(steady!.priority).toBe(10);
    // On BullMQ's wait list: a tenant's first job, and a lone tenant's first 4; ranked after that.
    expect([steady!.listed, hog[3]!.listed, hog[4]!.listed]).toEqual([true, true, false]);
    const [batch] = await burst(shares, queue, 3, 1, true);
    expect(batch!.priority).toBeGreaterThan(BATCH_RANK_BASE);
    for (const place of [...hog.slice(10), steady!, batch!]) place.leave();
    // Nobody waits: the counts are gone, and ranks start over.
    await expect.poll(() => redis.hgetall('gw:{fair:completion}:line')).toEqual({});
  });

  it('keeps ranks apart under a backlog that never empties: the virtual time stops short of the most rank', async () => {
    const shares = new FairShares(redis);
    const queue = QueueName.audio;
    const keep = await burst(shares, queue, 1, 1);
    // As after hours of a backlog that never ran empty.
    await redis.hset('gw:{fair:audio}:line', 'i:v', 5_000_000);
    const hog = await burst(shares, queue, 4, 3);
    const [steady] = await burst(shares, queue, 5, 1);
    expect(hog.map((p) => p.priority)).toEqual([800_001, 800_002, 800_003]);
    expect(steady!.priority).toBe(800_001);
    expect(Math.max(...hog.map((p) => p.priority))).toBeLessThan(BATCH_RANK_BASE);
    for (const place of [...keep, ...hog, steady!]) place.leave();
  });
});
