/** The model queues' backlog check over a real Redis and real BullMQ queues: refusals by the drain rate the workers show. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { createRedis, drainedCounterKey, type Redis } from '@gateway/queue';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { QueueBacklog, FINISHED_WINDOW_MS } from './queue-backlog.ts';

let server: TestRedis;
let a: Redis;

beforeAll(async () => {
  server = await useTestRedis();
  a = createRedis(server.url, { name: 'a' });
});
afterAll(async () => {
  a.disconnect();
  await server.close();
});

describe('the queue backlog check', () => {
  it('refuses with 503 when the backlog cannot drain in time at the measured rate, and admits again when it can', async () => {
    const queue = new Queue(QueueName.completion, { connection: a, prefix: QUEUE_PREFIX });
    const admission = new QueueBacklog({ redis: a, queues: [QueueName.completion], maxWaitMs: 1000, maxBacklog: 100_000, sampleEveryMs: 50 });
    admission.start();
    expect(() => admission.admit(QueueName.completion)).not.toThrow();
    await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'x', data: { i } })));
    // Workers finish 20 jobs a second: 200 waiting would take 10 s, more than the 1 s allowed.
    for (let i = 0; i < 12; i++) {
      await a.incrby(drainedCounterKey(QueueName.completion), 1);
      await new Promise((r) => setTimeout(r, 50)); // the pace of the workers' drain
    }
    const refusalOf = (): any => {
      try {
        admission.admit(QueueName.completion);
        return undefined;
      } catch (error) {
        return error;
      }
    };
    // Refused once a sample has seen the backlog and the rate (later on a loaded machine).
    await expect.poll(refusalOf, { timeout: 10_000 }).toMatchObject({ status: 503, code: 'overloaded' });
    expect(refusalOf().retryAfter).toBeGreaterThanOrEqual(1);
    await queue.drain();
    await expect.poll(refusalOf, { timeout: 10_000 }).toBeUndefined();
    expect(() => admission.admit(QueueName.completion)).not.toThrow();
    admission.stop();
    await queue.close();
  });

  it('refuses a backlog over the hard cap even before any rate is known', async () => {
    const queue = new Queue(QueueName.audio, { connection: a, prefix: QUEUE_PREFIX });
    const admission = new QueueBacklog({ redis: a, queues: [QueueName.audio], maxWaitMs: 60_000, maxBacklog: 50, sampleEveryMs: 50 });
    admission.start();
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'x', data: { i } })));
    // Once a sample has seen the backlog (later on a loaded machine).
    await expect.poll(() => { try { admission.admit(QueueName.audio); return ''; } catch (error) { return String(error); } }, { timeout: 10_000 }).toMatch(/too long/);
    expect(() => admission.admit(QueueName.audio)).toThrow(/too long/);
    admission.stop();
    await queue.obliterate({ force: true });
    await queue.close();
  });

  it("reports jobs finished a second falling to 0 once none finish, while admission keeps the last rate it measured", async () => {
    const admission = new QueueBacklog({ redis: a, queues: [QueueName.audio], maxWaitMs: 60_000, maxBacklog: 50, sampleEveryMs: 50 });
    admission.start();
    // A burst: about 20 jobs a second for a second.
    for (let i = 0; i < 20; i++) {
      await a.incrby(drainedCounterKey(QueueName.audio), 1);
      await new Promise((r) => setTimeout(r, 50)); // the pace of the burst
    }
    expect(admission.finishedRate(QueueName.audio)).toBeGreaterThan(5);
    // The burst's last jobs are measured by a sample after it (later on a loaded machine): the
    // rate is read once two readings 250 ms apart agree.
    let last = -1;
    await expect.poll(async () => {
      const before = admission.drainRate(QueueName.audio);
      await new Promise((r) => setTimeout(r, 250));
      const now = admission.drainRate(QueueName.audio);
      last = now;
      return now === before;
    }, { timeout: 30_000, interval: 0 }).toBe(true);
    const measured = last;
    expect(measured).toBeGreaterThan(5);
    // Then nothing: what the console shows falls to 0 within the window; admission's estimate keeps its rate.
    await expect.poll(() => admission.finishedRate(QueueName.audio), { timeout: FINISHED_WINDOW_MS * 3, interval: 200 }).toBe(0);
    expect(admission.drainRate(QueueName.audio)).toBe(measured);
    admission.stop();
  });
});
