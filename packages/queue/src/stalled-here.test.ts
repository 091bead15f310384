/**
 * A job whose lock lapses while its worker still runs it (the worker's event loop or Redis
 * stalled past the lock, as on a loaded machine), with a real Redis: the lapse is made by
 * deleting the lock, which is what its expiry does.
 */
import { Writable } from 'node:stream';
import { describe, expect, it, onTestFinished } from 'vitest';
import { pino } from 'pino';
import { QueueName } from '@gateway/contracts';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { startJobWorker } from './index.ts';

const q = useQueueHarness('stalled-here-ingress');

/** A logger whose messages are kept, to wait for what the worker did. */
function keptLog() {
  const messages: string[] = [];
  const sink = new Writable({ write(line, _encoding, done) { messages.push(String(JSON.parse(String(line)).msg)); done(); } });
  return { log: pino({ level: 'warn' }, sink), messages };
}

describe('a job whose lock lapses while its worker runs it', () => {
  it('is neither run a second time nor failed as its worker\'s death: its run answers it, once', async () => {
    const { log, messages } = keptLog();
    const runs: string[] = [];
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    onTestFinished(() => release());
    q.worker = await startJobWorker<{ n: number }>({
      queue: QueueName.admin, redisTarget: q.server.url, concurrency: 4, log,
      handler: async ({ jobId }) => {
        runs.push(jobId);
        await released;
        return { answered: true };
      },
    });
    const answer = q.jobs.request<{ n: number }, unknown>(QueueName.admin, { n: 1 }, { requestId: 'stalled-1', timeoutMs: 60_000 });
    await expect.poll(() => runs.length).toBe(1);
    const lock = `{gw}:admin:${runs[0]}:lock`;
    expect(await q.redis.exists(lock)).toBe(1);

    // First lapse: BullMQ hands the job out again, to this worker (before, it ran a second time,
    // calling its upstream twice).
    await q.redis.del(lock);
    const handedOut = () => messages.filter((m) => /handed out again/.test(m)).length;
    await expect.poll(() => runs.length + handedOut(), { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(2);
    expect(runs).toHaveLength(1);
    // Second lapse: BullMQ fails it as stalled (before, its client got a 500 saying its worker
    // died, and a job kept on the board without its payload crashed the worker).
    let settled = false;
    void answer.then(() => (settled = true), () => (settled = true));
    await q.redis.del(lock);
    const failedHere = () => messages.filter((m) => /failed as stalled while this worker ran it/.test(m)).length;
    await expect.poll(() => failedHere() + Number(settled), { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(1);
    expect(settled).toBe(false);

    release();
    await expect(answer).resolves.toEqual({ answered: true });
    expect(runs).toHaveLength(1);
  }, 60_000);

  it('is not run a second time when its lock lapsed as its run ended (BullMQ could not mark it done)', async () => {
    const { log, messages } = keptLog();
    const runs: string[] = [];
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    onTestFinished(() => release());
    q.worker = await startJobWorker<{ n: number }>({
      queue: QueueName.admin, redisTarget: q.server.url, concurrency: 4, log,
      handler: async ({ jobId }) => {
        runs.push(jobId);
        await released;
        return { answered: true };
      },
    });
    const answer = q.jobs.request<{ n: number }, unknown>(QueueName.admin, { n: 2 }, { requestId: 'stalled-2', timeoutMs: 60_000 });
    await expect.poll(() => runs.length).toBe(1);
    await q.redis.del(`{gw}:admin:${runs[0]}:lock`);
    release();
    await expect(answer).resolves.toEqual({ answered: true });
    // Its end found no lock: still active, it is handed out again by the next stalled check.
    const handedOut = () => messages.filter((m) => /handed out again/.test(m)).length;
    await expect.poll(() => runs.length + handedOut(), { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(2);
    expect(runs).toHaveLength(1);
  }, 60_000);
});
