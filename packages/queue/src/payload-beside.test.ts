import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { QueueName } from '@gateway/contracts';
import { createRedis, JobClient, ReplyInbox, startJobWorker, waitForRedis, type JobHandler, type JobWorker, type Redis } from './index.ts';
import { PAYLOAD_INLINE_MAX_CHARS } from './payload-beside.ts';

interface Payload { text: string }

let server: TestRedis;
let redis: Redis;
let inbox: ReplyInbox;
let jobs: JobClient;
let worker: JobWorker | undefined;
let handler: JobHandler<Payload> = async () => null;
const log = pino({ level: 'silent' });

beforeAll(async () => {
  server = await useTestRedis();
  redis = createRedis(server.url, { name: 'test' });
  await waitForRedis(redis);
  inbox = new ReplyInbox('beside-ingress', createRedis(server.url, { name: 'test-reader', blocking: true }), redis);
  inbox.start();
  jobs = new JobClient(redis, inbox);
});
afterEach(async () => {
  await worker?.close();
  worker = undefined;
});
afterAll(async () => {
  await inbox.stop();
  await jobs.close();
  redis.disconnect();
  await server.close();
});

const runWorker = async () => {
  worker = await startJobWorker<Payload>({ queue: QueueName.admin, redisTarget: server.url, concurrency: 8, handler: (c) => handler(c), log });
};
const payloadKeys = () => redis.keys('gw:payload:*');
const aofBytes = async () => Number(/aof_current_size:(\d+)/.exec(await redis.info('persistence'))![1]);
const send = (text: string, options: { timeoutMs?: number; requestId?: string } = {}) =>
  jobs.request<Payload, { length: number; same: boolean }>(QueueName.admin, { text }, { requestId: options.requestId ?? 'big', timeoutMs: options.timeoutMs ?? 10_000, payloadChars: text.length + 12 });

// 3 MB of text whose characters take 1 to 4 bytes in UTF-8, so slices of 256 KiB end inside characters.
const big = 'añ€😀'.repeat(300_000);

describe('a large payload beside its job', () => {
  it('reaches the handler whole, is never in the job nor in the AOF, and is gone once the job ends', async () => {
    const aofBefore = await aofBytes();
    let inJob: unknown;
    handler = async ({ jobId, payload }) => {
      inJob = (await jobs.shardsOf(QueueName.admin)[0]!.getJob(jobId))?.data;
      return { length: payload.text.length, same: payload.text === big };
    };
    await runWorker();
    expect(await send(big)).toEqual({ length: big.length, same: true });
    expect(inJob).toMatchObject({ payloadKey: expect.stringMatching(/^gw:payload:/) });
    expect(inJob).not.toHaveProperty('payload');
    // Written to memory only: the AOF grew by the job's few hundred bytes, not by its 3 MB.
    expect(await aofBytes() - aofBefore).toBeLessThan(100_000);
    await expect.poll(payloadKeys).toEqual([]);
  });

  it('keeps a small payload in the job', async () => {
    let inJob: any;
    handler = async ({ jobId, payload }) => {
      inJob = (await jobs.shardsOf(QueueName.admin)[0]!.getJob(jobId))?.data;
      return { length: payload.text.length, same: true };
    };
    await runWorker();
    const small = 'x'.repeat(PAYLOAD_INLINE_MAX_CHARS / 2);
    expect(await send(small)).toEqual({ length: small.length, same: true });
    expect(inJob.payload.text).toBe(small);
    expect(inJob.payloadKey).toBeUndefined();
  });

  it('answers 503, to send again, when the payload was lost before a worker took the job (a Redis restart)', async () => {
    handler = async ({ payload }) => ({ length: payload.text.length, same: true });
    const answer = send(big, { requestId: 'lost' }).catch((error: unknown) => error);
    // Queued, nobody serving the queue yet; then its payload goes, as a restart would take it.
    await expect.poll(async () => (await payloadKeys()).length).toBe(1);
    await expect.poll(() => jobs.shardsOf(QueueName.admin)[0]!.getWaitingCount()).toBe(1);
    await redis.unlink(...(await payloadKeys()));
    await runWorker();
    expect(await answer).toMatchObject({ status: 503, code: 'overloaded', message: expect.stringContaining('send it again') });
  });

  it('is removed with a job given up on before a worker took it', async () => {
    const answer = send(big, { requestId: 'late', timeoutMs: 1500 }).catch((error: unknown) => error);
    await expect.poll(async () => (await payloadKeys()).length).toBe(1);
    expect(await answer).toMatchObject({ status: 504 });
    await expect.poll(payloadKeys).toEqual([]);
  });
});
