import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { registerWorker, WORKER_STALE_MS, workerRegistryKey, workersOf } from './worker-registry.ts';

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

describe('the worker registry', () => {
  it('lists a process while it runs, and not after it stops', async () => {
    const registration = registerWorker(redis, 'q1', { lanes: 2, concurrency: 64 });
    await expect.poll(async () => (await workersOf(redis, 'q1')).length).toBe(1);
    const [entry] = await workersOf(redis, 'q1');
    expect(entry).toMatchObject({ process: `${(await import('node:os')).hostname()}/${process.pid}`, lanes: 2, concurrency: 64 });
    await registration.stop();
    expect(await workersOf(redis, 'q1')).toEqual([]);
  });

  it('leaves out and sweeps a process that died without saying so', async () => {
    const key = workerRegistryKey('q2');
    await redis.hset(key, 'gone/1', JSON.stringify({ lanes: 1, concurrency: 8, seen: Date.now() - WORKER_STALE_MS - 1 }), 'alive/2', JSON.stringify({ lanes: 1, concurrency: 8, seen: Date.now() }), 'garbled/3', '{');
    expect((await workersOf(redis, 'q2')).map((w) => w.process)).toEqual(['alive/2']);
    expect(await redis.hkeys(key)).toEqual(['alive/2']);
  });
});
