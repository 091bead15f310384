/**
 * A withdrawal (`JobClient.withdrawById`, a cancelled batch's lines) stops a job only until it
 * has begun: removed while it waits in the queue, stopped with a `withdrawn` answer while a
 * worker holds it unbegun, and left to run once begun. Real Redis, real BullMQ.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { GatewayError, QueueName } from '@gateway/contracts';
import { JobClient, PAYLOAD_INLINE_MAX_CHARS, startJobWorker, type JobContext, type Redis } from './index.ts';

const log = pino({ level: 'silent' });

const q = useQueueHarness('withdraw-ingress');

/**
 * `begins`: the job begins; `failsOver`: it ends that attempt unbegun once withdrawn (or after
 * 5 s) and waits again. `holdMs`: how long it then works before it answers.
 */
interface Payload { begins: boolean; failsOver?: boolean; holdMs?: number; text?: string }

/**
 * What the worker has done, by job id, so a test waits for the state it needs (held, begun)
 * instead of sleeping and hoping the worker got there on a loaded machine.
 */
interface Seen { ran: number; aborted: number; held: Set<string>; begun: Set<string> }
const newSeen = (): Seen => ({ ran: 0, aborted: 0, held: new Set(), begun: new Set() });

/** Waits `ms`, or rejects when `signal` aborts. */
function hold(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('aborted')); }, { once: true });
  });
}

async function runWorker(seen: Seen) {
  q.worker = await startJobWorker<Payload>({
    queue: QueueName.admin, redisTarget: q.server.url, concurrency: 4, log,
    handler: async ({ jobId, payload, begin, signal }: JobContext<Payload>) => {
      seen.held.add(jobId);
      try {
        if (payload.begins) {
          const unbegun = begin();
          seen.begun.add(jobId);
          if (payload.failsOver) {
            // Ends unbegun once the withdrawal has been heard, however long that takes.
            await hold(5000, withdrawnSignal(jobId)).catch(() => undefined);
            unbegun();
          }
        }
        await hold(payload.holdMs ?? 300, signal);
      } catch (error) {
        seen.aborted++;
        throw error;
      }
      seen.ran++;
      return 'ran';
    },
  });
}

/** Aborted once the test has sent the job's withdrawal. */
const withdrawals = new Map<string, AbortController>();
const withdrawnSignal = (jobId: string) => withdrawalOf(jobId).signal;
function withdrawalOf(jobId: string): AbortController {
  let controller = withdrawals.get(jobId);
  if (!controller) withdrawals.set(jobId, controller = new AbortController());
  return controller;
}
async function withdraw(jobId: string) {
  const taken = await q.jobs.withdrawById(QueueName.admin, jobId);
  withdrawalOf(jobId).abort();
  return taken;
}

let seq = 0;
const send = (payload: Payload) => {
  const jobId = `withdraw-${++seq}`;
  const options = { requestId: jobId, jobId, timeoutMs: 20_000, payloadChars: payload.text?.length ?? 0 };
  const answer = q.jobs.request<Payload, string>(QueueName.admin, payload, options).catch((error: unknown) => error);
  return { jobId, answer };
};

describe('a withdrawal', () => {
  // The first request of its JobClient, with a payload beside its job: it broke the connection
  // while the new queue loaded its scripts (every later command hung).
  it('removes a job still waiting in the queue, and its payload beside it: it never runs', async () => {
    const { jobId } = send({ begins: true, text: 'x'.repeat(PAYLOAD_INLINE_MAX_CHARS + 1) });
    await expect.poll(async () => q.jobs.exists(QueueName.admin, jobId)).toBe(true);
    const payloads = async () => Number(await q.redis.eval("return #redis.call('keys', 'gw:payload:*')", 0));
    expect(await payloads()).toBe(1);
    expect(await withdraw(jobId)).toMatchObject({ data: { requestId: jobId, payloadKey: expect.any(String) }, taken: false });
    await expect.poll(payloads).toBe(0);
    const seen = newSeen();
    await runWorker(seen);
    // A later job is run, so the worker has looked at the queue since the withdrawal.
    const later = send({ begins: true, holdMs: 0 });
    expect(await later.answer).toBe('ran');
    expect(seen.held).toEqual(new Set([later.jobId]));
    expect(seen).toMatchObject({ ran: 1, aborted: 0 });
  });

  it('stops a job a worker holds unbegun, answering withdrawn; one begun runs on and answers', async () => {
    const seen = newSeen();
    await runWorker(seen);
    const unbegun = send({ begins: false, holdMs: 10_000 });
    const begun = send({ begins: true, holdMs: 1000 });
    await expect.poll(() => seen.held.has(unbegun.jobId) && seen.begun.has(begun.jobId)).toBe(true);
    expect(await withdraw(unbegun.jobId)).toBeUndefined();
    expect(await withdraw(begun.jobId)).toBeUndefined();
    const withdrawn = await unbegun.answer;
    expect(withdrawn).toBeInstanceOf(GatewayError);
    expect((withdrawn as GatewayError).code).toBe('withdrawn');
    expect(await begun.answer).toBe('ran');
    expect(seen).toMatchObject({ ran: 1, aborted: 1 });
  });

  it('stops a job withdrawn while begun once its attempt ends unbegun (a failover follows)', async () => {
    const seen = newSeen();
    await runWorker(seen);
    const failing = send({ begins: true, failsOver: true, holdMs: 10_000 });
    await expect.poll(() => seen.begun.has(failing.jobId)).toBe(true);
    await withdraw(failing.jobId);
    const answer = await failing.answer;
    expect((answer as GatewayError).code).toBe('withdrawn');
    expect(seen).toMatchObject({ ran: 0, aborted: 1 });
  });

  it('a cancellation still stops a begun job, and is not softened by a withdrawal heard with it', async () => {
    const seen = newSeen();
    await runWorker(seen);
    const begun = send({ begins: true, holdMs: 10_000 });
    await expect.poll(() => seen.begun.has(begun.jobId)).toBe(true);
    await withdraw(begun.jobId);
    q.jobs.cancelById(QueueName.admin, begun.jobId);
    await expect.poll(() => seen.aborted).toBe(1);
    expect(seen.ran).toBe(0);
  });
});
