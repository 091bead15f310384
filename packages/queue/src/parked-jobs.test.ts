/**
 * Jobs a lane took beyond its slots for another tenant's sake, whose own tenant is at its share,
 * wait for a slot (`LaneGate.admit`). Such a parked job whose client leaves is dropped at once,
 * however long it has waited, and a worker that stops answers its parked jobs at once with a 503
 * to send again, instead of running them while it drains. Real Redis, real BullMQ, one slot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { GatewayError, QueueName } from '@gateway/contracts';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { FairShares, startJobWorker, type JobContext, type JobEnd } from './index.ts';

const log = pino({ level: 'silent' });
const q = useQueueHarness('parked-jobs-ingress');
const queue = QueueName.completion;

interface Payload { name: string }

/** A worker of one slot whose handler holds job `a1` until `releaseA1`; what it ran and how each job ended. */
async function oneSlotWorker() {
  const ran: string[] = [];
  const ends = new Map<string, JobEnd<Payload>>();
  const dropped: string[] = [];
  const { promise: a1Released, resolve: releaseA1 } = Promise.withResolvers<void>();
  q.worker = await startJobWorker<Payload>({
    // Room in BullMQ for A1, A2 waiting for its slot, and B beside them.
    queue, redisTarget: q.server.url, concurrency: 1, waitingPerSlot: 2, log,
    handler: async ({ payload }: JobContext<Payload>) => {
      ran.push(payload.name);
      if (payload.name === 'a1') await a1Released;
      return payload.name;
    },
    onJobEnd: (end) => ends.set(end.payload.name, end),
    onJobDropped: (payload) => dropped.push(payload.name),
  });
  return { ran, ends, dropped, releaseA1 };
}

let seq = 0;
/** `oneSlotWorker`, its A1 let go when the test ends, however it ends (the worker's close waits for it). */
let letGo: (() => void) | undefined;
async function withWorker() {
  const worker = await oneSlotWorker();
  letGo = worker.releaseA1;
  return worker;
}
afterEach(() => letGo?.());

/** Tenant A's first job takes the one slot; A's second is parked once tenant B waits (and B runs beside). */
async function parkA2(ran: string[], a2TimeoutMs = 30_000) {
  const fair = new FairShares(q.redis);
  const send = (name: string, userId: number, options: { priority?: number; listed?: boolean; signal?: AbortSignal; timeoutMs?: number } = {}) =>
    q.jobs.request<Payload, string>(queue, { name }, {
      requestId: `${name}-${++seq}`, timeoutMs: options.timeoutMs ?? 30_000, signal: options.signal, priority: options.priority,
      tenant: { userId, tokenId: userId, listed: options.listed },
    }).catch((error: unknown) => error);
  const a1 = send('a1', 1);
  await expect.poll(() => ran).toEqual(['a1']);
  // Both in their tenants' fair lines (B's makes the lane borrow a fetch), A2 first on the wait list.
  const [placeA2, placeB] = [await fair.join(queue, { userId: 1, tokenId: 1 }, false), await fair.join(queue, { userId: 2, tokenId: 2 }, false)];
  const client = new AbortController();
  const a2 = send('a2', 1, { priority: placeA2.priority, listed: placeA2.listed, signal: client.signal, timeoutMs: a2TimeoutMs });
  const b = send('b', 2, { priority: placeB.priority, listed: placeB.listed });
  // B was fetched after A2: A2 waits in the lane, for a slot held by A1.
  expect(await b).toBe('b');
  expect(ran).toEqual(['a1', 'b']);
  return { a1, a2, leave: () => client.abort() };
}

describe('a job parked in a full lane', () => {
  it('is dropped as soon as its client leaves, and what it held is given back, while the slot\'s job runs on', async () => {
    const { ran, ends, dropped, releaseA1 } = await withWorker();
    const { a1, a2, leave } = await parkA2(ran);
    leave();
    expect(await a2).toMatchObject({ code: 'cancelled' });
    // Its row and its hold, with A1 still running: not when a slot frees (nor, past a minute, never).
    await expect.poll(() => ends.get('a2')?.outcome, { timeout: 5000 }).toBe('cancelled');
    expect(dropped).toEqual(['a2']);
    releaseA1();
    expect(await a1).toBe('a1');
    // A later job of A's runs: the dropped one gave its place back.
    expect(await q.jobs.request<Payload, string>(queue, { name: 'a3' }, { requestId: 'a3', timeoutMs: 10_000, tenant: { userId: 1, tokenId: 1 } })).toBe('a3');
    expect(ran).toEqual(['a1', 'b', 'a3']);
  });

  it('is dropped unrun when its deadline passes while it waits, its row a 504', async () => {
    const { ran, ends, dropped } = await withWorker();
    const { a2 } = await parkA2(ran, 3000);
    expect(await a2).toMatchObject({ status: 504 });
    await expect.poll(() => ends.get('a2')?.outcome, { timeout: 5000 }).toBe('expired');
    expect(dropped).toEqual(['a2']);
    expect(ends.get('a1')).toBeUndefined();
  });

  it('is answered 503 with Retry-After at once when its worker stops, not run while the worker drains', async () => {
    const { ran, ends, dropped, releaseA1 } = await withWorker();
    const { a1, a2 } = await parkA2(ran);
    const started = Date.now();
    const closing = q.worker!.close(Date.now() + 30_000);
    const answer = await a2;
    expect(answer).toBeInstanceOf(GatewayError);
    expect(answer).toMatchObject({ status: 503, code: 'overloaded', retryAfter: expect.any(Number), message: expect.stringMatching(/the worker is stopping .*send it again/) });
    // While A1 still runs: the stop did not wait for a slot to answer it.
    expect(Date.now() - started).toBeLessThan(5000);
    await expect.poll(() => ends.get('a2')).toMatchObject({ outcome: 'error', error: { status: 503 } });
    expect(ends.get('a1')).toBeUndefined();
    expect(dropped).toEqual(['a2']);
    releaseA1();
    expect(await a1).toBe('a1');
    await closing;
    q.worker = undefined;
    expect(ran).toEqual(['a1', 'b']);
  });
});
