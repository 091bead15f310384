import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import type { Channel } from '@gateway/contracts';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { ChannelLeases, type Lease } from './channel-leases.ts';
import { LeaseQueue } from './lease-queue.ts';
import { routingKeys } from './routing-keys.ts';

let server: TestRedis;
const connections: Redis[] = [];
const closers: (() => void)[] = [];

beforeAll(async () => {
  server = await useTestRedis();
});
afterAll(async () => {
  for (const close of closers) close();
  for (const c of connections) c.disconnect();
  await server.close();
});

const connect = () => {
  const redis = new Redis(server.url);
  connections.push(redis);
  return redis;
};

/** One worker process as far as leases go: its connections, leases and waiting queue. */
async function process(ttlMs = 15_000) {
  const leases = new ChannelLeases(connect(), { ttlMs });
  const queue = new LeaseQueue(leases);
  const subscriber = connect();
  subscriber.on('message', (name: string, message: string) => {
    if (name === routingKeys.leaseFreed) queue.hear(Number(message));
    else queue.hearWanted(message);
  });
  await subscriber.subscribe(routingKeys.leaseFreed, routingKeys.leaseWanted);
  closers.push(() => leases.close());
  return { leases, queue };
}

let seq = 1000;
const channel = (max_concurrency: number, fields: Partial<Channel> = {}): Channel => ({
  id: ++seq, name: 'c', type: 'openai', key: 'sk-x', base_url: 'http://u', models: ['m'], group: 'default',
  tag: '', priority: 0, weight: 1, model_mapping: {}, max_concurrency, timeout_ms: 1000, status: 1,
  status_reason: '', created_time: 0, used_quota: 0, response_time: 0, ...fields,
});
const wait = (deadlineMs = 5000, signal = new AbortController().signal) => ({ signal, deadline: Date.now() + deadlineMs });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('channel leases', () => {
  it('hands out at most max_concurrency leases across processes, and a release makes room', async () => {
    const [a, b] = [await process(), await process()];
    const ch = channel(2);
    const first = await a.leases.tryAcquire(ch.id, 2);
    const second = await b.leases.tryAcquire(ch.id, 2);
    expect(first.leases).toHaveLength(1);
    expect(second).toMatchObject({ leases: [expect.anything()], free: 0 });
    const third = await a.leases.tryAcquire(ch.id, 2);
    expect(third.leases).toEqual([]);
    expect(third.expiresInMs).toBeGreaterThan(14_000);
    await b.leases.release(second.leases[0]!);
    expect((await a.leases.tryAcquire(ch.id, 2)).leases).toHaveLength(1);
  });

  it('takes several leases in one call, only as many as are free', async () => {
    const a = await process();
    const ch = channel(5);
    await a.leases.tryAcquire(ch.id, 5, 2);
    const batch = await a.leases.tryAcquire(ch.id, 5, 10);
    expect(batch).toMatchObject({ free: 0 });
    expect(batch.leases).toHaveLength(3);
    expect(new Set(batch.leases.map((l) => l.id)).size).toBe(3);
    expect(await connections[0]!.zcard(routingKeys.leases(ch.id))).toBe(5);
    for (const lease of batch.leases) await a.leases.release(lease);
    expect(await connections[0]!.zcard(routingKeys.leases(ch.id))).toBe(2);
  });

  it('lets the leases of a process that stopped renewing them run out, and renews those of a live one', async () => {
    const crashed = await process(600);
    const live = await process(600);
    const ch = channel(2);
    expect((await crashed.leases.tryAcquire(ch.id, 2)).leases).toHaveLength(1);
    expect((await live.leases.tryAcquire(ch.id, 2)).leases).toHaveLength(1);
    crashed.leases.close(); // no more renewals: as if the process had died
    expect((await live.leases.tryAcquire(ch.id, 2)).leases).toEqual([]);
    await sleep(900); // on purpose: past the lease time (600 ms), through the live process's renewals
    expect((await live.leases.tryAcquire(ch.id, 2)).leases).toHaveLength(1);
    // The live lease was renewed past its first expiry: the channel is full again.
    expect((await live.leases.tryAcquire(ch.id, 2)).leases).toEqual([]);
    expect(await connections[0]!.zcard(routingKeys.leases(ch.id))).toBe(2);
  });

  it('removes the key once the last lease is given back', async () => {
    const a = await process();
    const ch = channel(1);
    const { leases: [lease] } = await a.leases.tryAcquire(ch.id, 1);
    await a.leases.release(lease!);
    expect(await connections[0]!.exists(routingKeys.leases(ch.id))).toBe(0);
  });
});

describe('waiting for a lease', () => {
  it('costs no Redis call for a channel without a limit, and prefers the choice order', async () => {
    const a = await process();
    const unlimited = channel(0);
    expect(await a.queue.acquire([unlimited], wait())).toEqual({ channel: unlimited });
    expect(await connections[0]!.exists(routingKeys.leases(unlimited.id))).toBe(0);

    const [full, spare] = [channel(1), channel(1)];
    await a.leases.tryAcquire(full.id, 1);
    const slot = await a.queue.acquire([full, spare], wait());
    expect(slot.channel.id).toBe(spare.id);
    expect(slot.lease?.channelId).toBe(spare.id);
  });

  it('wakes a waiter in another process as soon as a lease is given back', async () => {
    const [a, b] = [await process(), await process()];
    const ch = channel(1);
    const { leases: [lease] } = await a.leases.tryAcquire(ch.id, 1);
    let got = 0;
    const waiting = b.queue.acquire([ch], wait()).then((slot) => { got = Date.now(); return slot; });
    await sleep(300); // a window on purpose: no lease while none is given back
    expect(got).toBe(0);
    const released = Date.now();
    await a.leases.release(lease!);
    const slot = await waiting;
    expect(slot.lease).toBeDefined();
    // Well before the fallback back-off (which has doubled to 500 ms by now).
    expect(got - released).toBeLessThan(150);
  });

  it('serves the waiters of a process first come, first served, without newcomers overtaking them', async () => {
    const a = await process();
    const ch = channel(1);
    let lease: Lease | undefined = (await a.leases.tryAcquire(ch.id, 1)).leases[0];
    const order: number[] = [];
    const waiters = [0, 1, 2, 3].map((i) =>
      a.queue.acquire([ch], wait()).then((slot) => { order.push(i); return slot; }),
    );
    await vi.waitFor(() => expect(a.queue.waiting).toBe(4));
    for (let i = 0; i < 4; i++) {
      await a.leases.release(lease!);
      if (i === 0) {
        // A newcomer arriving while the channel has room for a moment still queues behind.
        waiters.push(a.queue.acquire([ch], wait()).then((slot) => { order.push(4); return slot; }));
      }
      ({ lease } = await waiters[i]!);
    }
    await a.leases.release(lease!);
    ({ lease } = await waiters[4]!);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    await a.leases.release(lease!);
  });

  it('serves a more urgent request first, even one that came later', async () => {
    const a = await process();
    const ch = channel(1);
    let lease: Lease | undefined = (await a.leases.tryAcquire(ch.id, 1)).leases[0];
    const order: string[] = [];
    const queued = (name: string, batch: boolean) =>
      a.queue.acquire([ch], { ...wait(), batch }).then((slot) => { order.push(name); return slot; });
    const batch = [queued('batch-1', true), queued('batch-2', true)];
    await vi.waitFor(() => expect(a.queue.waiting).toBe(2));
    const interactive = queued('interactive', false);
    await vi.waitFor(() => expect(a.queue.waiting).toBe(3));
    await a.leases.release(lease!);
    ({ lease } = await interactive);
    await a.leases.release(lease!);
    ({ lease } = await batch[0]!);
    await a.leases.release(lease!);
    ({ lease } = await batch[1]!);
    expect(order).toEqual(['interactive', 'batch-1', 'batch-2']);
    await a.leases.release(lease!);
  });

  it('gives up at the deadline with 504, or at once when the request is cancelled, and leaks nothing', async () => {
    const a = await process();
    const ch = channel(1);
    const { leases: [lease] } = await a.leases.tryAcquire(ch.id, 1);
    const started = Date.now();
    await expect(a.queue.acquire([ch], wait(300))).rejects.toMatchObject({ status: 504 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);

    const controller = new AbortController();
    const cancelled = a.queue.acquire([ch], wait(5000, controller.signal));
    await vi.waitFor(() => expect(a.queue.waiting).toBe(1));
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ status: 499 });
    expect(a.queue.waiting).toBe(0);

    await a.leases.release(lease!);
    await vi.waitFor(async () => expect(await connections[0]!.zcard(routingKeys.leases(ch.id))).toBe(0));
  });

  it('takes an expired lease of a crashed process when it runs out, without any release', async () => {
    const crashed = await process(500);
    const a = await process(500);
    const ch = channel(1);
    await crashed.leases.tryAcquire(ch.id, 1);
    crashed.leases.close();
    const started = Date.now();
    const slot = await a.queue.acquire([ch], wait());
    expect(slot.lease).toBeDefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('takes leases for every waiting request in one round trip when several are given back at once', async () => {
    const a = await process();
    // No poll within the test: only the announcement (`hear`) makes the line try again.
    const queue = new LeaseQueue(a.leases, { pollMs: 10_000, maxPollMs: 10_000 });
    const ch = channel(3);
    const held = (await a.leases.tryAcquire(ch.id, 3, 3)).leases;
    const tries = vi.spyOn(a.leases, 'tryAcquire');
    const waiters = Array.from({ length: 5 }, () => queue.acquire([ch], wait()));
    // Once all wait, their line's first attempt has begun too: let every try so far end.
    await vi.waitFor(() => expect(queue.waiting).toBe(5));
    await Promise.all(tries.mock.results.map((result) => result.value));
    tries.mockClear();
    for (const lease of held) await a.leases.release(lease);
    queue.hear(ch.id);
    const served = await Promise.all(waiters.slice(0, 3));
    expect(tries).toHaveBeenCalledTimes(1);
    expect(queue.waiting).toBe(2);
    for (const slot of served) await a.leases.release(slot.lease!);
    queue.hear(ch.id);
    for (const slot of await Promise.all(waiters.slice(3))) await a.leases.release(slot.lease!);
    tries.mockRestore();
  });

  it('lets every waiting request go when the channel\'s limit is lifted meanwhile', async () => {
    const a = await process();
    const ch = channel(1);
    const { leases: [lease] } = await a.leases.tryAcquire(ch.id, 1);
    const waiting = a.queue.acquire([ch], wait());
    await vi.waitFor(() => expect(a.queue.waiting).toBe(1));
    const lifted = { ...ch, max_concurrency: 0 };
    expect(await a.queue.acquire([lifted], wait())).toEqual({ channel: lifted });
    expect(await waiting).toEqual({ channel: ch, lease: undefined });
    expect(a.queue.waiting).toBe(0);
    await a.leases.release(lease!);
  });

  it('never has more than the limit in flight with many waiters in several processes', async () => {
    const processes = [await process(), await process(), await process()];
    const ch = channel(3);
    let inFlight = 0;
    let most = 0;
    const work = Array.from({ length: 30 }, async (_, i) => {
      const p = processes[i % 3]!;
      const { lease } = await p.queue.acquire([ch], wait(10_000));
      inFlight++;
      most = Math.max(most, inFlight);
      await sleep(10 + (i % 4) * 5); // the work a lease is held for
      inFlight--;
      await p.queue.release(lease!);
    });
    await Promise.all(work);
    expect(most).toBe(3);
  });

  it('gives a freed slot to a request of the same process waiting for it, with no round trip', async () => {
    const a = await process();
    const ch = channel(1);
    const first = (await a.queue.acquire([ch], wait())).lease!;
    const waiting = a.queue.acquire([ch], wait());
    await vi.waitFor(() => expect(a.queue.waiting).toBe(1));
    const releases = vi.spyOn(a.leases, 'release');
    expect(await a.queue.release(first)).toBe('handed-over');
    const second = (await waiting).lease!;
    expect(second.id).toBe(first.id);
    expect(releases).not.toHaveBeenCalled();
    expect(await connections[0]!.zrange(routingKeys.leases(ch.id), 0, -1)).toEqual([first.id]);
    // Nobody waits any more: the lease goes back to Redis, and the channel is free again.
    expect(await a.queue.release(second)).toBe('given-back');
    expect(await connections[0]!.exists(routingKeys.leases(ch.id))).toBe(0);
    releases.mockRestore();
  });

  it('gives back, not hands over, a lease Redis may have let run out while its process stalled', async () => {
    const [a, b] = [await process(600), await process()];
    const ch = channel(1);
    const stale = (await a.queue.acquire([ch], wait())).lease!;
    a.leases.close(); // a stall: its leases are no longer renewed
    await sleep(700);
    // Its slot ran out, and another process has taken it.
    const other = (await b.queue.acquire([ch], wait())).lease!;
    const waiting = a.queue.acquire([ch], wait());
    await vi.waitFor(() => expect(a.queue.waiting).toBe(1));
    expect(await a.queue.release(stale)).toBe('given-back');
    await sleep(100);
    expect(a.queue.waiting).toBe(1); // still waiting: the one slot is the other process's
    await b.queue.release(other);
    expect((await waiting).lease).toBeDefined();
  });

  it('no longer hands over a lease a renewal found gone (a failover lost it)', async () => {
    const a = await process(600);
    const ch = channel(1);
    const lost = (await a.queue.acquire([ch], wait())).lease!;
    await connections[0]!.del(routingKeys.leases(ch.id)); // what a failover to a replica behind it does
    await sleep(300); // a renewal (every 200 ms here) finds it gone
    const waiting = a.queue.acquire([ch], wait());
    const slot = await waiting; // the slot is free in Redis: the waiter takes it there
    expect(slot.lease!.id).not.toBe(lost.id);
    const another = a.queue.acquire([ch], wait());
    await vi.waitFor(() => expect(a.queue.waiting).toBe(1));
    expect(await a.queue.release(lost)).toBe('given-back'); // not to the waiter: it holds no slot
    expect(a.queue.waiting).toBe(1);
    await a.queue.release(slot.lease!);
    await another.then((s) => a.queue.release(s.lease!));
  });

  it('gives freed slots back through Redis while another process waits, so a busy process does not keep a channel to itself', async () => {
    const [a, b] = [await process(), await process()];
    const ch = channel(1);
    const stopA = new AbortController();
    const outcomes: string[] = [];
    // A busy process: a request of its own always waits behind the one in flight.
    let held = (await a.queue.acquire([ch], wait())).lease!;
    const busy = (async () => {
      let next = a.queue.acquire([ch], wait(10_000, stopA.signal));
      try {
        for (;;) {
          await sleep(10); // the upstream call
          const following = next;
          next = a.queue.acquire([ch], wait(10_000, stopA.signal));
          outcomes.push(await a.queue.release(held));
          held = (await following).lease!;
        }
      } catch {
        next.catch(() => {});
      }
    })();
    await sleep(200);
    expect(outcomes.length).toBeGreaterThan(5);
    expect(new Set(outcomes)).toEqual(new Set(['handed-over']));
    // Another process's request gets the channel before its deadline (else 504), though the
    // busy one never stops wanting it: the busy one's leases go back to Redis, raced for.
    const slot = await b.queue.acquire([ch], wait(5000));
    expect(outcomes).toContain('given-back');
    stopA.abort();
    await b.queue.release(slot.lease!);
    await busy;
    await a.queue.release(held).catch(() => {});
  });
});
