/**
 * A finished job a worker killed outright left whole (ended, but not yet made small, its payload
 * and reply address still in its data) is made small by the next worker to start, with a real
 * Redis: the job is ended by BullMQ itself, as a worker would end it before it was killed.
 */
import { describe, expect, it } from 'vitest';
import { Queue, Worker } from 'bullmq';
import { pino } from 'pino';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { createRedis } from './redis-connection.ts';
import { KEPT_WHEN_FINISHED } from './finished-jobs.ts';
import { startJobWorker } from './index.ts';

const q = useQueueHarness('left-whole-ingress');

describe('a finished job left whole by a worker killed outright', () => {
  it('is made small when a worker of its queue starts: its payload and reply address leave Redis', async () => {
    const connection = createRedis(q.server.url, { name: 'test-bull', blocking: true });
    const queue = new Queue(QueueName.admin, { connection, prefix: QUEUE_PREFIX });
    const data = { requestId: 'r-1', replyTo: 'gone-ingress', deadline: Date.now() + 60_000, stream: false, payload: { operation: 'user.update', actor: { id: 1, role: 100 }, input: { password_hash: 'scrypt$16384$secret' } } };
    await queue.add('job', data, { jobId: 'left-whole-1', ...KEPT_WHEN_FINISHED });
    // Run and ended by BullMQ alone: nothing made it small, as when its worker died right after.
    const bare = new Worker(QueueName.admin, async () => 'done', { connection, prefix: QUEUE_PREFIX });
    try {
      await expect.poll(async () => (await queue.getJob('left-whole-1'))?.finishedOn, { timeout: 10_000 }).toBeGreaterThan(0);
    } finally {
      await bare.close();
    }
    expect(JSON.stringify((await queue.getJob('left-whole-1'))!.data)).toContain('scrypt$');

    q.worker = await startJobWorker<unknown>({ queue: QueueName.admin, redisTarget: q.server.url, concurrency: 1, log: pino({ level: 'silent' }), handler: async () => ({ unused: true }) });
    try {
      await expect.poll(async () => (await queue.getJob('left-whole-1'))!.data, { timeout: 10_000 })
        .toEqual({ requestId: 'r-1', deadline: data.deadline, stream: false, payload: { operation: 'user.update' } });
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
