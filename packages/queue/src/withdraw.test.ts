/**
 * A withdrawal (`JobClient.withdrawById`, a cancelled batch's lines) stops a job only until it
 * has begun: removed while it waits in the queue, stopped with a `withdrawn` answer while a
 * worker holds it unbegun, and left to run once begun. Real Redis, real BullMQ.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { useQueueHarness } from './queue-test-harness.ts';
import { GatewayError, QueueName } from '@gateway/contracts';
import { JobClient, PAYLOAD_INLINE_MAX_CHARS, startJobWorker, type JobContext, type Redis } from './index.ts';

const log = pino({ level: 'silent' });

const q = useQueueHarness('withdraw-ingress');

/** `begins`: the job begins; `failsOver`: it ends that attempt unbegun after 400 ms and waits again. */
interface Payload { begins: boolean; failsOver?: boolean; text?: string }

/** Jobs wait 300 ms (after `begin` when they begin), or until their signal aborts. */
async function runWorker(seen: { ran: number; aborted: number }) {
  q.worker = await startJobWorker<Payload>({
    queue: QueueName.admin, redisTarget: q.server.url, concurrency: 4, log,
    handler: async ({ payload, begin, signal }: JobContext<Payload>) => {
      if (payload.begins) {
        const unbegun = begin();
        if (payload.failsOver) {
          await new Promise((r) => setTimeout(r, 400));
          unbegun();
        }
      }
      await new Promise<void>((resolve, reject) => {
        if (signal.aborted) return reject(new Error('aborted'));
        const timer = setTimeout(resolve, 300);
        signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('aborted')); }, { once: true });
      }).catch((error) => { seen.aborted++; throw error; });
      seen.ran++;
      return 'ran';
    },
  });
}

let seq = 0;
const send = (payload: Payload) => {
  const jobId = `withdraw-${++seq}`;
  const options = { requestId: jobId, jobId, timeoutMs: 5000, payloadChars: payload.text?.length ?? 0 };
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
    expect(await q.jobs.withdrawById(QueueName.admin, jobId)).toMatchObject({ data: { requestId: jobId, payloadKey: expect.any(String) }, taken: false });
    await expect.poll(payloads).toBe(0);
    const seen = { ran: 0, aborted: 0 };
    await runWorker(seen);
    await new Promise((r) => setTimeout(r, 500));
    expect(seen).toEqual({ ran: 0, aborted: 0 });
  });

  it('stops a job a worker holds unbegun, answering withdrawn; one begun runs on and answers', async () => {
    const seen = { ran: 0, aborted: 0 };
    await runWorker(seen);
    const unbegun = send({ begins: false });
    const begun = send({ begins: true });
    await new Promise((r) => setTimeout(r, 100));
    expect(await q.jobs.withdrawById(QueueName.admin, unbegun.jobId)).toBeUndefined();
    expect(await q.jobs.withdrawById(QueueName.admin, begun.jobId)).toBeUndefined();
    const withdrawn = await unbegun.answer;
    expect(withdrawn).toBeInstanceOf(GatewayError);
    expect((withdrawn as GatewayError).code).toBe('withdrawn');
    expect(await begun.answer).toBe('ran');
    expect(seen).toEqual({ ran: 1, aborted: 1 });
  });

  it('stops a job withdrawn while begun once its attempt ends unbegun (a failover follows)', async () => {
    const seen = { ran: 0, aborted: 0 };
    await runWorker(seen);
    const failing = send({ begins: true, failsOver: true });
    await new Promise((r) => setTimeout(r, 150));
    await q.jobs.withdrawById(QueueName.admin, failing.jobId);
    const answer = await failing.answer;
    expect((answer as GatewayError).code).toBe('withdrawn');
    expect(seen).toEqual({ ran: 0, aborted: 1 });
  });

  it('a cancellation still stops a begun job, and is not softened by a withdrawal heard with it', async () => {
    const seen = { ran: 0, aborted: 0 };
    await runWorker(seen);
    const begun = send({ begins: true });
    await new Promise((r) => setTimeout(r, 100));
    await q.jobs.withdrawById(QueueName.admin, begun.jobId);
    q.jobs.cancelById(QueueName.admin, begun.jobId);
    await expect.poll(() => seen.aborted).toBe(1);
    expect(seen.ran).toBe(0);
  });
});
