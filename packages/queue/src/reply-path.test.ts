import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { pino } from 'pino';
import { useQueueHarness } from '@gateway/testkit/queue-harness';
import { GatewayError, QueueName } from '@gateway/contracts';
import { CANCEL_CHANNEL, createRedis, JobClient, ReplySender, replyStreamKey, startJobWorker, type JobHandler, type Redis } from './index.ts';
import { PAYLOAD_INLINE_MAX_CHARS } from './payload-beside.ts';
import { MAX_ENTRY_CHARS, MAX_REPLY_CHARS } from './reply-sender.ts';

const log = pino({ level: 'silent' });

/** What the tests' jobs carry: a number to answer with, work to do, or a text (a large payload). */
interface Payload { n: number; wait?: number; chunks?: number; text?: string; request?: unknown }
let handler: JobHandler<Payload> = async () => null;

const q = useQueueHarness('test-ingress');

async function runWorker(concurrency = 64, options: { replyRetryMs?: number } = {}) {
  q.worker = await startJobWorker<Payload>({ queue: QueueName.admin, redisTarget: q.server.url, concurrency, handler: (c) => handler(c), log, ...options });
}

/** Every job control (cancel, pause, resume, credit) published from now until the test ends, as sent. */
async function hearJobControls(): Promise<string[]> {
  const heard: string[] = [];
  const listener = createRedis(q.server.url, { name: 'test-listener' });
  await listener.subscribe(CANCEL_CHANNEL);
  listener.on('message', (_channel: string, message: string) => heard.push(message));
  onTestFinished(() => listener.disconnect());
  return heard;
}

const request = (n: number, extra: Partial<Parameters<JobClient['request']>[2]> = {}) =>
  q.jobs.request<Payload, unknown>(QueueName.admin, { n, ...(extra as object) }, { requestId: `r${n}`, timeoutMs: 5000, ...extra } as Parameters<JobClient['request']>[2]);


describe('the reply path', () => {
  it('answers every one of 2,000 concurrent requests with its own result, and leaves nothing behind', async () => {
    handler = async ({ payload }) => ({ doubled: payload.n * 2 });
    await runWorker(128);
    const results = await Promise.all(Array.from({ length: 2000 }, (_, n) => request(n, { timeoutMs: 30_000 })));
    results.forEach((result, n) => expect(result).toEqual({ doubled: n * 2 }));
    await vi.waitFor(async () => expect(await q.redis.xlen(replyStreamKey('test-ingress'))).toBe(0), { timeout: 3000 });
    // A reply goes out before its job is marked done: the last few are still active for a moment.
    await vi.waitFor(async () => {
      const counts = await q.jobs.shardsOf(QueueName.admin)[0]!.getJobCounts('waiting', 'active', 'completed', 'failed');
      expect(counts).toMatchObject({ waiting: 0, active: 0, completed: 0, failed: 0 });
    }, { timeout: 3000 });
  });

  it('turns a thrown GatewayError into a rejection with the same status and message', async () => {
    handler = async () => {
      throw new GatewayError({ status: 409, code: 'conflict', message: 'taken' });
    };
    await runWorker();
    await expect(request(1)).rejects.toMatchObject({ status: 409, message: 'taken' });
  });

  it('fails only its own request for a reply it cannot read, and goes on reading every other', async () => {
    // Entries written by something else than this version's ReplySender: an error reply that is
    // not JSON and one that is JSON but no error, beside a good result for another job, in one entry.
    // Its failure taken at once: it may come before the XADD's own answer.
    const broken = q.inbox.expect('broken-job').then(() => 'answered', (error: unknown) => error);
    const shapeless = q.inbox.expect('shapeless-job').then(() => 'answered', (error: unknown) => error);
    const fine = q.inbox.expect('fine-job');
    await q.redis.xadd(replyStreamKey('test-ingress'), '*', 'ebroken-job', 'not json', 'eshapeless-job', '{}', 'rfine-job', '"ok"');
    expect(await broken).toMatchObject({ status: 500 });
    expect(await shapeless).toMatchObject({ status: 500 });
    await expect(fine).resolves.toBe('"ok"');
    await runWorker();
    handler = async ({ payload }) => payload.n;
    await expect(request(7)).resolves.toBe(7);
  });

  it('relays stream chunks in order before the result', async () => {
    handler = async ({ payload, sendChunk }) => {
      for (let i = 0; i < payload.chunks!; i++) await sendChunk(`chunk-${i}`);
      return 'done';
    };
    await runWorker();
    const seen: string[] = [];
    const result = await q.jobs.request(QueueName.admin, { n: 1, chunks: 50 }, { requestId: 'r', timeoutMs: 5000, onChunk: (c) => { seen.push(c); } });
    expect(result).toBe('done');
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => `chunk-${i}`));
  });

  it('gathers the chunks of many streams for one ingress into few entries, each stream in order', async () => {
    handler = async ({ payload, sendChunk }) => {
      for (let i = 0; i < payload.chunks!; i++) {
        await sendChunk(`${payload.n}:${i}`);
        if (i % 5 === 4) await new Promise((r) => setTimeout(r, 1)); // the pace of a model's tokens
      }
      return payload.n;
    };
    await runWorker();
    await q.redis.config('RESETSTAT');
    const seen = new Map<number, string[]>();
    const results = await Promise.all(Array.from({ length: 50 }, (_, n) => {
      seen.set(n, []);
      return q.jobs.request(QueueName.admin, { n, chunks: 20 }, { requestId: `s${n}`, timeoutMs: 10_000, onChunk: (c) => { seen.get(n)!.push(c); } });
    }));
    expect(results).toEqual(Array.from({ length: 50 }, (_, n) => n));
    for (const [n, chunks] of seen) expect(chunks).toEqual(Array.from({ length: 20 }, (_, i) => `${n}:${i}`));
    // 1,050 replies (1,000 chunks and 50 results); one entry each would be 1,050 XADDs.
    const xadds = Number(/cmdstat_xadd:calls=(\d+)/.exec(await q.redis.info('commandstats'))?.[1]);
    expect(xadds).toBeLessThan(1050 / 4);
  });

  it.each([
    ['24 replies of 3 MB', 24, 3 * 1024 * 1024],
    ['3,000 replies of 24 KB', 3000, 24 * 1024],
  ])('writes %s given in one turn as entries of at most MAX_ENTRY_CHARS (8 Mi), in order', async (_, count, size) => {
    const sender = new ReplySender(q.redis);
    const stream = replyStreamKey('big-replies');
    onTestFinished(() => void q.redis.del(stream));
    // One text for all: the sender's memory is then the entries it builds, not the replies.
    const reply = 'x'.repeat(size - 8);
    // Before, they went out as one XADD however large: past V8's largest string (512 Mi
    // characters: 24 batch lines of 36 MB), ioredis threw a RangeError from an Immediate, outside
    // any handler, and the worker died.
    await Promise.all(Array.from({ length: count }, (_, i) => sender.chunk('big-replies', `job-${i}`, `${String(i).padStart(8, '0')}${reply}`)));
    // Awaited through the last entry: a result waits for every chunk before it.
    await sender.result('big-replies', 'job-last', 'end');
    const entries = (await q.redis.xrange(stream, '-', '+')) as [string, string[]][];
    const sizes = entries.map(([, fields]) => fields.reduce((sum, f, i) => sum + (i % 2 === 1 ? f.length : 0), 0));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_ENTRY_CHARS);
    expect(entries.length).toBeGreaterThanOrEqual(Math.ceil((count * size) / MAX_ENTRY_CHARS));
    const order = entries.flatMap(([, fields]) => fields.filter((_, i) => i % 2 === 1).map((data) => data.slice(0, 8)));
    expect(order).toEqual([...Array.from({ length: count }, (_, i) => String(i).padStart(8, '0')), '"end"']);
  }, 120_000);

  it('refuses a reply past MAX_REPLY_CHARS with a 502 to its job, writing nothing, and goes on sending', async () => {
    const sender = new ReplySender(q.redis);
    const stream = replyStreamKey('huge-reply');
    onTestFinished(() => void q.redis.del(stream));
    // A command of one reply this large would near V8's largest string as ioredis builds it.
    await expect(sender.result('huge-reply', 'job-huge', 'x'.repeat(MAX_REPLY_CHARS + 1))).rejects.toMatchObject({ status: 502, message: expect.stringMatching(/too large to relay/) });
    await sender.result('huge-reply', 'job-next', 'ok');
    const entries = (await q.redis.xrange(stream, '-', '+')) as [string, string[]][];
    expect(entries.flatMap(([, fields]) => fields.filter((_, i) => i % 2 === 1))).toEqual(['"ok"']);
  });

  it('pauses a stream while its client catches up, and resumes it after', async () => {
    let sent = 0;
    handler = async ({ payload, sendChunk }) => {
      for (let i = 0; i < payload.chunks!; i++) {
        await sendChunk(`chunk-${i}`);
        sent++;
        await new Promise((r) => setTimeout(r, 2)); // the pace of a model's tokens
      }
      return 'done';
    };
    await runWorker();
    const seen: string[] = [];
    const slowClient = Promise.withResolvers<void>();
    const result = q.jobs.request(QueueName.admin, { n: 1, chunks: 100 }, {
      requestId: 'slow', timeoutMs: 10_000,
      // The first chunk fills the client's socket; it drains when told to.
      onChunk: (c) => {
        seen.push(c);
        if (seen.length === 1) return slowClient.promise;
      },
    });
    await vi.waitFor(() => expect(seen.length).toBeGreaterThan(0), { timeout: 3000 });
    // A window on purpose: the worker must not go on sending while the client is slow.
    await new Promise((r) => setTimeout(r, 300));
    // Paused within a few chunks of the first, not 100 sent into the gateway's memory.
    expect(sent).toBeLessThan(20);
    slowClient.resolve();
    expect(await result).toBe('done');
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => `chunk-${i}`));
  });

  it('holds a stream to its credit window when every pause is lost, and streams on as the client takes it', async () => {
    let sentChars = 0;
    handler = async ({ payload, sendChunk }) => {
      for (let i = 0; i < payload.chunks!; i++) {
        const chunk = `${i}:`.padEnd(1000, '.');
        await sendChunk(chunk);
        sentChars += chunk.length;
      }
      return 'done';
    };
    await runWorker();
    const jobId = `windowed-${Date.now()}`;
    const slowClient = Promise.withResolvers<void>();
    let caughtUp = false;
    let seen = 0;
    const result = q.jobs.request(QueueName.admin, { n: 1, chunks: 200 }, {
      requestId: 'windowed', jobId, timeoutMs: 10_000, windowChars: 5_000,
      // The client's socket is full from the first chunk until it is told to drain.
      onChunk: () => {
        seen++;
        if (!caughtUp) return slowClient.promise;
      },
    });
    // Every pause undone as soon as it is made, as if each were lost or had lapsed: only the
    // window holds the worker back.
    const undo = setInterval(() => void q.redis.publish(CANCEL_CHANNEL, `resume:${jobId}`), 1);
    try {
      await vi.waitFor(() => expect(seen).toBeGreaterThan(0), { timeout: 3000 });
      // A window on purpose: the worker must not send past its window meanwhile.
      await new Promise((r) => setTimeout(r, 300));
      // At most the window, and the chunk that crossed it: not 200 kB into the gateway's memory.
      expect(sentChars).toBeLessThanOrEqual(5_000 + 1_000);
    } finally {
      clearInterval(undo);
    }
    caughtUp = true;
    slowClient.resolve();
    // Credited half a window at a time as the client takes it, the stream runs to its end.
    expect(await result).toBe('done');
    expect(seen).toBe(200);
    expect(sentChars).toBe(200_000);
  });

  it('ends a job waiting for credit when its client leaves, and sends no credit for it after', async () => {
    let sentChars = 0;
    let jobEnded = false;
    handler = async ({ sendChunk, signal }) => {
      try {
        for (let i = 0; i < 1000 && !signal.aborted; i++) {
          const chunk = `${i}:`.padEnd(1000, '.');
          await sendChunk(chunk);
          sentChars += chunk.length;
        }
        if (signal.aborted) throw new GatewayError({ status: 499, code: 'cancelled', message: 'cancelled' });
        return 'done';
      } finally {
        jobEnded = true;
      }
    };
    await runWorker();
    const heard = await hearJobControls();
    const jobId = `leaves-waiting-${Date.now()}`;
    const controller = new AbortController();
    let seen = 0;
    const result = q.jobs.request(QueueName.admin, { n: 1 }, {
      requestId: 'leaves-waiting', jobId, timeoutMs: 10_000, windowChars: 5_000, signal: controller.signal,
      // Takes the first 10 chunks (credited), then its socket is full for good.
      onChunk: () => {
        seen++;
        if (seen > 10) return new Promise<never>(() => {});
      },
    });
    const undo = setInterval(() => void q.redis.publish(CANCEL_CHANNEL, `resume:${jobId}`), 1);
    try {
      await vi.waitFor(() => expect(seen).toBeGreaterThan(10), { timeout: 3000 });
      // A window on purpose: the worker must not send past its credit meanwhile.
      await new Promise((r) => setTimeout(r, 300));
      // Credited for the 10 chunks it took: the window past that, and the chunk that crossed it.
      expect(sentChars).toBeLessThanOrEqual(10_000 + 5_000 + 1_000);
      expect(heard.some((m) => m.startsWith('credit:') && m.endsWith(jobId))).toBe(true);
      controller.abort();
      await expect(result).rejects.toMatchObject({ status: 499 });
      // The cancel reaches the worker: its wait ends with the chunk it was sending, then the job.
      await vi.waitFor(() => expect(jobEnded).toBe(true), { timeout: 10_000 });
      const ended = sentChars;
      expect(ended).toBeLessThanOrEqual(10_000 + 5_000 + 1_000);
      const creditsAtEnd = heard.filter((m) => m.startsWith('credit:')).length;
      // Past the 2 s a lost credit is sent again after: nothing more for a request that is over.
      await new Promise((r) => setTimeout(r, 2500));
      expect(sentChars).toBe(ended);
      expect(heard.filter((m) => m.startsWith('credit:')).length).toBe(creditsAtEnd);
    } finally {
      clearInterval(undo);
    }
  });

  it('costs no credit message for a stream shorter than half its window', async () => {
    handler = async ({ sendChunk }) => {
      for (let i = 0; i < 10; i++) await sendChunk(`${i}`.padEnd(100, '.'));
      return 'done';
    };
    await runWorker();
    const heard = await hearJobControls();
    let seen = 0;
    await q.jobs.request(QueueName.admin, { n: 1 }, { requestId: 'short', timeoutMs: 5000, windowChars: 5_000, onChunk: () => void seen++ });
    expect(seen).toBe(10);
    await new Promise((r) => setTimeout(r, 100)); // a window on purpose: no credit comes late either
    expect(heard.filter((m) => m.startsWith('credit:'))).toEqual([]);
  });

  it('keeps a stream paused when its client leaves instead of catching up, until the cancel stops it', async () => {
    let sent = 0;
    handler = async ({ payload, sendChunk, signal }) => {
      for (let i = 0; i < payload.chunks! && !signal.aborted; i++) {
        await sendChunk(`chunk-${i}`);
        sent++;
        await new Promise((r) => setTimeout(r, 2)); // the pace of a model's tokens
      }
      if (signal.aborted) throw new GatewayError({ status: 499, code: 'cancelled', message: 'cancelled' });
      return 'done';
    };
    await runWorker();
    const controller = new AbortController();
    const gone = Promise.withResolvers<'gone'>();
    let seen = 0;
    const result = q.jobs.request(QueueName.admin, { n: 1, chunks: 10_000 }, {
      requestId: 'leaves', timeoutMs: 10_000, signal: controller.signal,
      onChunk: () => {
        seen++;
        if (seen === 1) return gone.promise;
      },
    });
    await vi.waitFor(() => expect(seen).toBeGreaterThan(0), { timeout: 3000 });
    await new Promise((r) => setTimeout(r, 200)); // a window on purpose: the worker stays paused
    const sentWhilePaused = sent;
    expect(sentWhilePaused).toBeLessThan(20);
    // The client's socket closes: no resume. Its cancel comes a little later, as it does when a
    // gateway drops a stalled client; in between, the job must not stream on to nobody.
    gone.resolve('gone');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent - sentWhilePaused).toBeLessThan(5);
    controller.abort();
    await expect(result).rejects.toMatchObject({ status: 499 });
    expect(sent).toBeLessThan(40);
  });

  it('gives a 504 at the deadline and aborts the worker that holds the job', async () => {
    let aborted = false;
    handler = ({ signal }) =>
      new Promise((_, reject) => signal.addEventListener('abort', () => {
        aborted = true;
        reject(new GatewayError({ status: 499, code: 'cancelled', message: 'cancelled' }));
      }));
    await runWorker();
    const started = Date.now();
    await expect(request(1, { timeoutMs: 300 })).rejects.toMatchObject({ status: 504 });
    expect(Date.now() - started).toBeLessThan(1500);
    await vi.waitFor(() => expect(aborted).toBe(true), { timeout: 3000 });
    await vi.waitFor(async () => expect(await q.jobs.shardsOf(QueueName.admin)[0]!.getActiveCount()).toBe(0), { timeout: 3000 });
  });

  it('removes a job nobody has taken yet when its request times out', async () => {
    const queue = q.jobs.shardsOf(QueueName.admin)[0]!;
    await expect(request(7, { timeoutMs: 200 })).rejects.toMatchObject({ status: 504 });
    await vi.waitFor(async () => expect(await queue.getWaitingCount()).toBe(0), { timeout: 3000 });
  });

  it('cancels the job when the client goes away', async () => {
    let started = false;
    let aborted = false;
    handler = ({ signal }) => {
      started = true;
      return new Promise((resolve) => signal.addEventListener('abort', () => {
        aborted = true;
        resolve(null);
      }));
    };
    await runWorker();
    const client = new AbortController();
    const pending = request(1, { signal: client.signal, timeoutMs: 15_000 });
    // The worker holds the job (its handler runs) before the client goes away.
    await vi.waitFor(() => expect(started).toBe(true), { timeout: 10_000 });
    client.abort();
    await expect(pending).rejects.toMatchObject({ code: 'cancelled' });
    await vi.waitFor(() => expect(aborted).toBe(true), { timeout: 10_000 });
  });

  it('loses no reply when the ingress connection drops while workers answer', async () => {
    let taken = 0;
    handler = async ({ payload }) => {
      taken++;
      await new Promise((r) => setTimeout(r, payload.wait)); // the work a job stands for
      return payload.n;
    };
    await runWorker(256);
    // A job whose hand-over to the worker is cut off is recovered when its lock lapses (stalled-job check).
    const pending = Array.from({ length: 200 }, (_, n) => request(n, { wait: 100, timeoutMs: 20_000 } as never));
    // Cut the connections while workers are answering: once the first jobs are being worked on.
    await vi.waitFor(() => expect(taken).toBeGreaterThan(0), { timeout: 5000, interval: 5 });
    await q.redis.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    const results = await Promise.all(pending);
    expect(results).toEqual(Array.from({ length: 200 }, (_, n) => n));
  }, 30_000);

  it("follows a job its caller asked to follow (a batch line's) when the add's answer is lost (Redis took it, then went away), rather than giving it up to be sent again", async () => {
    let runs = 0;
    handler = async ({ payload }) => {
      runs++;
      return payload.n;
    };
    const queue = q.jobs.shardsOf(QueueName.admin)[0]!;
    const add = queue.add.bind(queue);
    // Redis takes the job; its answer never comes back.
    queue.add = (async (...args: Parameters<typeof add>) => {
      await add(...args);
      throw new Error('Connection is closed.');
    }) as typeof queue.add;
    onTestFinished(() => {
      queue.add = add;
    });
    const unrun = vi.fn();
    await runWorker();
    await expect(request(41, { jobId: 'named-line-1', followUnsureAdd: true, onUnrun: unrun })).resolves.toBe(41);
    expect(runs).toBe(1);
    expect(unrun).not.toHaveBeenCalled();
    // A live request's job (the gateway names them too) is given up as before: a 503, and what
    // it held is given back.
    await expect(request(42, { jobId: 'live-request-1', onUnrun: unrun })).rejects.toMatchObject({ status: 503 });
    expect(unrun).toHaveBeenCalledTimes(1);
  });

  it("retries a result Redis refuses to write until the job's deadline, not only through a short blip, so it is neither lost nor run again", async () => {
    let runs = 0;
    handler = async ({ payload }) => {
      runs++;
      // Redis refuses every write (out of memory under noeviction) as the result is written, for
      // longer than a blip's retries (300 ms here, 10 s by default), then takes writes again.
      await q.redis.config('SET', 'maxmemory', '1');
      setTimeout(() => void q.redis.config('SET', 'maxmemory', '0'), 1500);
      return payload.n;
    };
    onTestFinished(() => void q.redis.config('SET', 'maxmemory', '0'));
    await runWorker(64, { replyRetryMs: 300 });
    // A batch line's job (its add followed, `followUnsureAdd`): given up, its result was lost and the line sent again, run and
    // charged a second time; a live request timed out with its usage charged.
    await expect(request(43, { jobId: 'named-line-2', followUnsureAdd: true, timeoutMs: 8000 })).resolves.toBe(43);
    expect(runs).toBe(1);
  }, 20_000);

  it('gives up within the blip window on a write refused for its own sake, so later replies to the ingress are not held to a deadline behind it', async () => {
    const sender = new ReplySender(q.redis, { retryForMs: 300 });
    // The ingress's stream key holds something else: every append to it is refused (WRONGTYPE).
    await q.redis.set(replyStreamKey('wrong-ingress'), 'not a stream');
    onTestFinished(() => void q.redis.del(replyStreamKey('wrong-ingress')));
    const started = Date.now();
    await expect(sender.result('wrong-ingress', 'job-1', 1, Date.now() + 10_000)).rejects.toThrow(/WRONGTYPE/);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

const payloadKeys = () => q.redis.keys('gw:payload:*');
const aofBytes = async () => Number(/aof_current_size:(\d+)/.exec(await q.redis.info('persistence'))![1]);
const send = (text: string, options: { timeoutMs?: number; requestId?: string } = {}) =>
  q.jobs.request<Payload, { length: number; same: boolean }>(QueueName.admin, { n: 0, text }, { requestId: options.requestId ?? 'big', timeoutMs: options.timeoutMs ?? 10_000, payloadChars: text.length + 20 });

// 3 MB of text whose characters take 1 to 4 bytes in UTF-8, so slices of 256 KiB end inside characters.
const big = 'añ€😀'.repeat(300_000);

describe('a large payload beside its job', () => {
  it('reaches the handler whole, is never in the job nor in the AOF, and is gone once the job ends', async () => {
    const aofBefore = await aofBytes();
    let inJob: unknown;
    handler = async ({ jobId, payload }) => {
      inJob = (await q.jobs.shardsOf(QueueName.admin)[0]!.getJob(jobId))?.data;
      return { length: payload.text!.length, same: payload.text === big };
    };
    await runWorker();
    expect(await send(big)).toEqual({ length: big.length, same: true });
    expect(inJob).toMatchObject({ payloadKey: expect.stringMatching(/^gw:payload:/) });
    expect(inJob).not.toHaveProperty('payload');
    // Written to memory only: the AOF grew by the job's few hundred bytes, not by its 3 MB.
    expect(await aofBytes() - aofBefore).toBeLessThan(100_000);
    await expect.poll(payloadKeys).toEqual([]);
  });

  it("is written with the request's JSON as it came, when given, in place of the parsed value", async () => {
    // A body as a client sends it: a byte-order mark, spacing, and 1 to 4 byte characters that
    // slices of 256 KiB cut through.
    const body = { model: 'm', prompt: big, nested: [1, null, { 'kéy': 'väl' }] };
    const requestJson = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(` ${JSON.stringify(body, null, 1)}\n`)]);
    let received: unknown;
    handler = async ({ payload }) => {
      received = payload;
      return { length: 0, same: true };
    };
    await runWorker();
    // The parsed value given is not serialised: the bytes stand for it.
    await q.jobs.request<Payload, unknown>(QueueName.admin, { n: 7, request: { not: 'sent' } }, { requestId: 'raw', timeoutMs: 10_000, payloadChars: requestJson.length, requestJson });
    expect(received).toStrictEqual({ n: 7, request: body });
    await expect.poll(payloadKeys).toEqual([]);
  });

  it('keeps a small payload in the job', async () => {
    let inJob: any;
    handler = async ({ jobId, payload }) => {
      inJob = (await q.jobs.shardsOf(QueueName.admin)[0]!.getJob(jobId))?.data;
      return { length: payload.text!.length, same: true };
    };
    await runWorker();
    const small = 'x'.repeat(PAYLOAD_INLINE_MAX_CHARS / 2);
    expect(await send(small)).toEqual({ length: small.length, same: true });
    expect(inJob.payload.text).toBe(small);
    expect(inJob.payloadKey).toBeUndefined();
  });

  it('answers 503, to send again, when the payload was lost before a worker took the job (a Redis restart)', async () => {
    handler = async ({ payload }) => ({ length: payload.text!.length, same: true });
    const answer = send(big, { requestId: 'lost' }).catch((error: unknown) => error);
    // Queued, nobody serving the queue yet; then its payload goes, as a restart would take it.
    await expect.poll(async () => (await payloadKeys()).length).toBe(1);
    await expect.poll(() => q.jobs.shardsOf(QueueName.admin)[0]!.getWaitingCount()).toBe(1);
    await q.redis.unlink(...(await payloadKeys()));
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
