/**
 * A cluster connection reopened while a master fails over: BullMQ drops and reopens a worker's
 * blocking connection whose wait outlived its drain delay, and a failover is when that happens.
 * ioredis's cluster ready check, run on a cluster whose state is `fail` (a master marked failed,
 * its replica not yet promoted), reconnects without ever settling the `connect()` it ran for:
 * BullMQ awaits that promise, so the lane never fetched again (an idle admin lane left management
 * answering 504 for good after a failover, test/redis-cluster.e2e.test.ts). The ready check is off
 * on a cluster (redis-connection.ts); a command to a shard without a master waits for the failover
 * as any other does.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnRedisCluster, type TestRedisCluster } from '@gateway/testkit';
import { createRedis, type Redis } from './index.ts';

let cluster: TestRedisCluster;
let redis: Redis;

beforeAll(async () => {
  cluster = await spawnRedisCluster({ nodeTimeoutMs: 1000 });
  const target = { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), tls: false, failoverWaitMs: 30_000 };
  redis = createRedis(target, { name: 'test-reopened', blocking: true });
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await cluster?.close();
});

describe('a cluster connection reopened during a failover', () => {
  it('connects every time, and serves the failed master\'s slots once its replica is promoted', async () => {
    const key = '{reopened}:marker';
    await redis.set(key, 'before');
    await cluster.kill(await cluster.masterFor(key));
    let whole = false;
    const healed = cluster.waitUntilHealthy(30_000).then(() => (whole = true));
    // Reopened as BullMQ does, again and again from the kill until the cluster is whole, so
    // that some attempts find its state `fail`.
    const attempts: string[] = [];
    while (!whole) {
      redis.disconnect();
      await sleep(20);
      const outcome = await Promise.race([redis.connect().then(() => 'connected', (e: Error) => `failed: ${e.message}`), sleep(15_000).then(() => 'never settled')]);
      attempts.push(outcome);
      await sleep(100);
    }
    await healed;
    expect(attempts.filter((a) => a === 'never settled')).toEqual([]);
    expect(attempts.length).toBeGreaterThan(5);
    // The replica has the write it had synced; the connection serves its slots.
    await expect(redis.set(key, 'after')).resolves.toBe('OK');
    expect(await redis.get(key)).toBe('after');
  }, 120_000);
});
