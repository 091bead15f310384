/**
 * A job its ingress gave up on is logged by why: its client left (cancelled, the request log's
 * 499), or the ingress cut it itself with its client still there: its shutdown past its deadline
 * (503) or its reply deadline (504). Real Redis, real BullMQ, a handler that runs until aborted.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { QueueName } from '@gateway/contracts';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { INGRESS_STOPPING, startJobWorker, type JobContext, type JobEnd } from './index.ts';

const log = pino({ level: 'silent' });
const q = useQueueHarness('ingress-cuts-ingress');

async function runUntilAborted() {
  const running = new Set<string>();
  const ends = new Map<string, JobEnd<{ name: string }>>();
  q.worker = await startJobWorker<{ name: string }>({
    queue: QueueName.admin, redisTarget: q.server.url, concurrency: 4, log,
    handler: ({ payload, signal }: JobContext<{ name: string }>) => new Promise((_, reject) => {
      running.add(payload.name);
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    }),
    onJobEnd: (end) => ends.set(end.payload.name, end),
  });
  return { running, ends };
}

/** Sends job `name`, waits until it runs, cuts it with `cut`; its end as the worker reports it. */
async function cutWhileRunning(name: string, cut: (client: AbortController) => void, timeoutMs = 30_000) {
  const { running, ends } = await runUntilAborted();
  const client = new AbortController();
  const answer = q.jobs.request(QueueName.admin, { name }, { requestId: name, timeoutMs, signal: client.signal }).catch((error: unknown) => error);
  await expect.poll(() => running.has(name), { timeout: 10_000 }).toBe(true);
  cut(client);
  await answer;
  await expect.poll(() => ends.get(name), { timeout: 10_000 }).toBeDefined();
  return ends.get(name)!;
}

describe('a running job its ingress gave up on', () => {
  it('is cancelled (499) when its client left', async () => {
    const end = await cutWhileRunning('left', (client) => client.abort());
    expect(end).toMatchObject({ outcome: 'cancelled' });
  });

  it("is the gateway's 503, not a client's leaving, when the gateway's shutdown cut it", async () => {
    const end = await cutWhileRunning('stopped', (client) => client.abort(INGRESS_STOPPING));
    expect(end).toMatchObject({ outcome: 'error', error: { status: 503, code: 'overloaded', message: expect.stringMatching(/the gateway stopped/) } });
  });

  it("is a 504, not a client's leaving, when its reply deadline passed", async () => {
    const end = await cutWhileRunning('late', () => {}, 1500);
    expect(end).toMatchObject({ outcome: 'error', error: { status: 504, code: 'timeout' } });
  });
});
