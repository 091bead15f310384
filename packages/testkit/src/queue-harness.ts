/**
 * For the queue package's tests: a Redis of their own, one ingress (a reply inbox and a JobClient
 * on it) for the whole file, and the worker a test starts, closed after each test. Imported from
 * `@gateway/testkit/queue-harness`, apart from the kit's index, so only these tests load BullMQ.
 */
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createRedis, JobClient, ReplyInbox, waitForRedis, type JobWorker, type Redis } from '@gateway/queue';
import { useTestRedis, type TestRedis } from './redis-harness.ts';

export interface QueueHarness {
  server: TestRedis;
  redis: Redis;
  inbox: ReplyInbox;
  jobs: JobClient;
  /** The worker a test started; closed after the test. */
  worker: JobWorker | undefined;
}

export function useQueueHarness(ingressId: string): QueueHarness {
  const harness = { worker: undefined } as QueueHarness;
  beforeAll(async () => {
    harness.server = await useTestRedis();
    harness.redis = createRedis(harness.server.url, { name: 'test' });
    // A request before the connection is ready is refused (503) by design: the tests wait for it.
    await waitForRedis(harness.redis);
    harness.inbox = new ReplyInbox(ingressId, createRedis(harness.server.url, { name: 'test-reader', blocking: true }), harness.redis);
    harness.inbox.start();
    harness.jobs = new JobClient(harness.redis, harness.inbox);
  });
  afterEach(async () => {
    await harness.worker?.close();
    harness.worker = undefined;
  });
  afterAll(async () => {
    await harness.inbox.stop();
    await harness.jobs.close();
    harness.redis.disconnect();
    await harness.server.close();
  });
  return harness;
}
