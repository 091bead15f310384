/**
 * A job kept for the queue board is made small (no payload) once it has completed, never before:
 * a job whose worker lost it between its run and its completion (the worker killed, its lock
 * lapsed) is run again by the stalled check with its whole request, the payload stored beside
 * it included. Real Redis, real BullMQ; the lock is taken away as a worker's death would.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { QueueName } from '@gateway/contracts';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { JobClient, PAYLOAD_INLINE_MAX_CHARS, shardPrefixes, startJobWorker, type JobContext } from './index.ts';

const log = pino({ level: 'silent' });
const q = useQueueHarness('stalled-rerun-ingress');

interface Payload { operation: string; request: { model: string; prompt: string } }

describe('a job lost by its worker after its run, before its completion', () => {
  it('is run again with its whole request (its payload beside it too), and only then kept small for the board', async () => {
    const [prefix] = shardPrefixes(QueueName.admin, 1);
    const seen: (Payload | undefined)[] = [];
    const start = () => startJobWorker<Payload>({
      queue: QueueName.admin, redisTarget: q.server.url, concurrency: 2, log,
      handler: async ({ jobId, payload }: JobContext<Payload>) => {
        seen.push(payload);
        // The first run's lock goes as a dead worker's would: its completion fails, the stalled check runs it again.
        if (seen.length === 1) await q.redis.del(`${prefix}:${QueueName.admin}:${jobId}:lock`);
        return 'done';
      },
    });
    q.worker = await start();
    // Every job kept for the board; a prompt large enough to be stored beside its job.
    const jobs = new JobClient(q.redis, q.inbox, { keepFinishedOneIn: 1 });
    const payload: Payload = { operation: 'completions', request: { model: 'm', prompt: 'private words '.repeat(PAYLOAD_INLINE_MAX_CHARS / 10) } };
    const jobId = 'lost-after-its-run';
    const payloadChars = JSON.stringify(payload).length;
    expect(await jobs.request(QueueName.admin, payload, { requestId: jobId, jobId, timeoutMs: 60_000, payloadChars })).toBe('done');

    // The worker that ran it goes, as a dead one would (a live one would not run its own job
    // twice: jobs-here.ts); another worker's stalled check hands it out again.
    await q.worker.close();
    q.worker = await start();
    const queue = jobs.shardsOf(QueueName.admin)[0]!;
    // Run again by the stalled check (a lock renewal's pace: 2.5 s) and completed.
    await expect.poll(() => queue.getJobState(jobId), { timeout: 30_000, interval: 200 }).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(payload);
    // Only once completed: who asked and what, not the prompt; nor the payload stored beside it.
    await expect.poll(async () => (await queue.getJob(jobId))?.data, { timeout: 5000 }).toEqual({ requestId: jobId, deadline: expect.any(Number), stream: false });
    await expect.poll(async () => Number(await q.redis.eval("return #redis.call('keys', 'gw:payload:*')", 0))).toBe(0);
    await jobs.close();
  }, 60_000);
});
