/**
 * A job waiting for room elsewhere (`JobContext.idle`) holds none of its worker's concurrency:
 * the worker takes other jobs meanwhile, never has more than its concurrency at work, and holds
 * at most WAITING_PER_SLOT more per slot. Real Redis, real BullMQ lanes.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { setTimeout as sleep } from 'node:timers/promises';
import { QueueName } from '@gateway/contracts';
import { startJobWorker, type JobContext, type Redis } from './index.ts';
import { WAITING_PER_SLOT } from './job-worker.ts';
import { FETCHED_BEFORE_BEGUN, IDLE_AFTER_MS, LaneGate } from './lane-gate.ts';

const log = pino({ level: 'silent' });

interface Payload { n: number; waits?: boolean; workMs?: number }

const q = useQueueHarness('lane-gate-ingress');

/** A worker whose jobs either wait for `room` (idle) or work `workMs`; it counts both. */
async function runWorker(concurrency: number) {
  /** `fresh`: jobs at work that never waited, which alone are held to the concurrency. */
  const seen = { started: 0, atWork: 0, mostAtWork: 0, fresh: 0, mostFresh: 0, waiting: 0 };
  let openRoom!: () => void;
  const room = new Promise<void>((resolve) => { openRoom = resolve; });
  const work = async (ms: number, waited: boolean) => {
    seen.atWork++;
    seen.mostAtWork = Math.max(seen.mostAtWork, seen.atWork);
    if (!waited) seen.mostFresh = Math.max(seen.mostFresh, ++seen.fresh);
    await sleep(ms); // the work a job stands for
    seen.atWork--;
    if (!waited) seen.fresh--;
  };
  q.worker = await startJobWorker<Payload>({
    queue: QueueName.admin, redisTarget: q.server.url, concurrency, log,
    handler: async ({ payload, idle }: JobContext<Payload>) => {
      seen.started++;
      if (payload.waits) {
        seen.waiting++;
        await idle(room);
        seen.waiting--;
      }
      await work(payload.workMs ?? 1, payload.waits === true);
      return payload.n;
    },
  });
  return { seen, openRoom };
}

let seq = 0;
const request = (payload: Omit<Payload, 'n'>) => {
  const n = ++seq;
  return q.jobs.request<Payload, number>(QueueName.admin, { n, ...payload }, { requestId: `r${n}`, timeoutMs: 20_000 });
};

describe('a job waiting for room elsewhere', () => {
  it("holds none of the worker's concurrency: other jobs run while it waits", async () => {
    const { seen, openRoom } = await runWorker(2);
    // Both slots taken by jobs that wait.
    const waiting = Array.from({ length: 2 }, () => request({ waits: true }));
    await expect.poll(() => seen.waiting).toBe(2);
    // With the worker's 2 slots held by waiting jobs, these would wait for the room to open;
    // a waiting job gives its slot up after IDLE_AFTER_MS.
    const started = performance.now();
    const quick = await Promise.all(Array.from({ length: 3 }, () => request({ workMs: 5 })));
    expect(quick).toHaveLength(3);
    expect(performance.now() - started).toBeLessThan(IDLE_AFTER_MS + 1000);
    expect(seen.mostAtWork).toBe(2);
    // What waited goes on at once when its wait ends: it holds what it waited for (a lease).
    openRoom();
    expect(await Promise.all(waiting)).toHaveLength(2);
  });

  it(`is held at most ${WAITING_PER_SLOT} a slot beyond the worker's concurrency; the rest wait in the queue`, async () => {
    const { seen, openRoom } = await runWorker(1);
    const waiting = Array.from({ length: 12 }, () => request({ waits: true }));
    const most = 1 + WAITING_PER_SLOT;
    await expect.poll(() => seen.waiting, { timeout: 5000 }).toBe(most);
    await sleep(300); // a window on purpose: no more jobs start while these wait
    expect(seen.started).toBe(most);
    openRoom();
    expect(await Promise.all(waiting)).toHaveLength(12);
    expect(seen.started).toBe(12);
  });

  it('never starts a job past the concurrency, through many jobs ending and waiting', async () => {
    const { seen, openRoom } = await runWorker(4);
    setTimeout(openRoom, 200);
    const all = await Promise.all(Array.from({ length: 300 }, (_, i) => request({ waits: i % 3 === 0, workMs: 1 + (i % 7) })));
    expect(all).toHaveLength(300);
    expect(seen.mostFresh).toBeLessThanOrEqual(4);
    expect(seen.mostFresh).toBeGreaterThan(1);
    expect(seen.mostAtWork).toBeLessThanOrEqual(4 * (1 + WAITING_PER_SLOT));
  });
});

describe('a worker with room for many jobs', () => {
  it(`begins the first job it fetched before it has fetched more than ${FETCHED_BEFORE_BEGUN} (an early job does not wait for the rest)`, async () => {
    // 100 jobs waiting before the worker starts, with room for 64 at once: BullMQ alone fetched
    // all 64, one Redis round trip each, before it began the first.
    const answers = Array.from({ length: 100 }, () => request({ workMs: 1 }));
    const queue = q.jobs.shardsOf(QueueName.admin)[0]!;
    await expect.poll(() => queue.getWaitingCount()).toBe(100);
    let fetchedAtFirst: number | undefined;
    q.worker = await startJobWorker<Payload>({
      queue: QueueName.admin, redisTarget: q.server.url, concurrency: 64, log,
      handler: async ({ payload }: JobContext<Payload>) => {
        fetchedAtFirst ??= await queue.getActiveCount();
        return payload.n;
      },
    });
    expect(await Promise.all(answers)).toHaveLength(100);
    // Read as the first begins: a few more are fetched while the count comes back (64 without).
    expect(fetchedAtFirst).toBeLessThan(24);
  });
});

describe('a lane past FETCHED_BEFORE_BEGUN', () => {
  it('begins every job it fetched before it fetches again (beginning one and fetching again kept 8 waiting for good)', () => {
    const gate = new LaneGate(256);
    for (let i = 0; i < FETCHED_BEFORE_BEGUN; i++) {
      expect(gate.enter()).toBe('fetch');
      gate.fetched({});
    }
    expect(gate.enter()).toBe('skip');
    for (let i = 1; i < FETCHED_BEFORE_BEGUN; i++) {
      gate.start();
      expect(gate.enter(), `${i} begun`).toBe('skip');
    }
    gate.start();
    expect(gate.enter()).toBe('fetch');
  });
});
