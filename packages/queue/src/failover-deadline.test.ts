/**
 * A request caught on a Redis Cluster master that never comes back (no replica to promote):
 * it waits within its deadline, then gets a clear 503 with Retry-After; it neither fails at
 * once nor hangs for the whole failover wait.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, QueueName } from '@gateway/contracts';
import { spawnRedisCluster, type TestRedisCluster } from '@gateway/testkit';
import { createRedis, JobClient, ReplyInbox, shardPrefixes, type Redis } from './index.ts';

let cluster: TestRedisCluster;
let redis: Redis;
let inbox: ReplyInbox;
let jobs: JobClient;

beforeAll(async () => {
  cluster = await spawnRedisCluster({ replicas: 0, nodeTimeoutMs: 1000 });
  const target = { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), tls: false, failoverWaitMs: 30_000 };
  // As the gateway connects: fail fast, which on a cluster still waits out a failover.
  redis = createRedis(target, { name: 'test-gateway', failFast: true });
  inbox = new ReplyInbox('failover-ingress', createRedis(target, { name: 'test-reader', blocking: true }), redis);
  inbox.start();
  jobs = new JobClient(redis, inbox, { shards: 3 });
}, 60_000);
afterAll(async () => {
  // Not awaited: the inbox's blocking read may be waiting for the master that never comes back.
  void inbox?.stop().catch(() => {});
  void jobs?.close().catch(() => {});
  redis?.disconnect();
  await cluster?.close();
});
describe('a request on a dead cluster master', () => {
  it('waits within its deadline, then gets a 503 with Retry-After', async () => {
    await jobs.shardsOf(QueueName.completion)[0]!.getJobCounts(); // connected, slots known
    await cluster.kill(await cluster.masterFor(shardPrefixes(QueueName.completion, 3)[0]!));
    const started = Date.now();
    // The first job goes to shard 0, on the dead master.
    const failure = await jobs.requestText(QueueName.completion, { n: 1 }, { requestId: 'r1', timeoutMs: 4000 }).catch((e: unknown) => e);
    const waited = Date.now() - started;
    expect(failure).toBeInstanceOf(GatewayError);
    expect(failure).toMatchObject({ status: 503, code: 'overloaded' });
    expect((failure as GatewayError).retryAfter).toBeGreaterThanOrEqual(1);
    // ioredis's default budget (16 tries) gave up after about 1.5 s; now it waits for the deadline, and no longer.
    expect(waited).toBeGreaterThanOrEqual(3900);
    expect(waited).toBeLessThan(5000);
  }, 30_000);
});
