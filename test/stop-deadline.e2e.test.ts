/**
 * A stop whose deadline (SHUTDOWN_TIMEOUT_MS) passes with a stream still running: the client
 * gets an error event after what it had, never a cut without one; the request's log row and
 * charge are written, for what was used, before the process exits; and what was cut is logged.
 * A stream the gateway cut itself (its stop, its reply deadline) is logged as its cut (503, 504),
 * never as a client that left (499).
 * Real Redis, PostgreSQL, gateway and worker processes, a mock upstream streaming slowly.
 */
import { describe, expect } from 'vitest';
import type { ServiceProcess, Stack } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ database: true, workers: [] });

/** 200 words, one every 50 ms: 10 s, far past the 1-second deadlines below. */
const TEXT = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
const STOP = { SHUTDOWN_TIMEOUT_MS: '1000' };

/** A stream begun through `gateway`, read in the background; `words()` counts those read so far. */
async function slowStream(gateway: string, key: string, requestId: string) {
  const answer = await fetch(`${gateway}/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ model: 'slow', prompt: 'hello', stream: true }),
  });
  expect(answer.status).toBe(200);
  let text = '';
  const reader = answer.body!.pipeThrough(new TextDecoderStream()).getReader();
  const ended = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text;
      text += value;
    }
  })();
  return { words: () => (text.match(/"text":" ?w\d+"/g) ?? []).length, ended };
}

/** The stream's events: its words and its last event. */
function eventsOf(text: string): { words: number; last: string } {
  const events = text.split('\n\n').filter((event) => event.startsWith('data: '));
  return { words: events.filter((event) => /"text":" ?w\d+"/.test(event)).length, last: events.at(-1) ?? '' };
}

async function logRow(stack: Stack, requestId: string) {
  const rows = (await stack.admin('GET', `/api/log/?request_id=${requestId}`)).body.data.items as Record<string, any>[];
  return rows[0];
}

const exitedWithin = async (service: ServiceProcess) => {
  const started = Date.now();
  const code = await service.stop('SIGTERM');
  return { code, ms: Date.now() - started };
};

describe('a stop past its deadline', () => {
  it('ends a worker\'s stream with an error event, and writes its row and charge for what was used before the worker exits', async ({ stack, upstream, channel, apiKey }) => {
    const worker = await stack.add('completion-worker', STOP);
    await channel(await upstream.openai({ text: TEXT, chunkDelayMs: 50 }), ['slow']);
    const { id, key } = await apiKey();
    const stream = await slowStream(stack.gateway.url, key, 'cut-by-worker-stop');
    await expect.poll(stream.words, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(10);

    const { code, ms } = await exitedWithin(worker);
    // Its deadline (1 s) and the grace to write its records (5 s at most).
    expect(code).toBe(0);
    expect(ms).toBeLessThan(6000);
    expect(worker.output.join('')).toMatch(/shutdown deadline passed; the jobs still running were ended/);

    const { words, last } = eventsOf(await stream.ended);
    expect(words).toBeGreaterThanOrEqual(10);
    expect(words).toBeLessThan(200);
    expect(last).toMatch(/the worker stopped before this answer was complete/);
    // Written before the worker exited: no wait for it.
    const row = await logRow(stack, 'cut-by-worker-stop');
    expect(row).toMatchObject({ status: 503, streamed: true, prompt_tokens: expect.any(Number) });
    console.log(`worker stopped in ${ms} ms; the client had ${words} of 200 words; the row: ${row.status}, ${row.completion_tokens} completion tokens`);
    // Charged what was delivered, by the worker's estimate (upstream usage comes only at the end).
    expect(row.completion_tokens).toBeGreaterThan(words / 2);
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${id}`)).body.data.used_quota, { timeout: 30_000 }).toBe(row.total_tokens);
  }, 60_000);

  it('ends a gateway\'s stream with an error event, answers 503 with Retry-After meanwhile, says what it cut, and the job\'s row and charge are written', async ({ stack, upstream, channel, apiKey }) => {
    await stack.add('completion-worker');
    const gateway = await stack.add('gateway', STOP);
    await channel(await upstream.openai({ text: TEXT, chunkDelayMs: 50 }), ['slow']);
    const { id, key } = await apiKey();
    const stream = await slowStream(gateway.url, key, 'cut-by-gateway-stop');
    await expect.poll(stream.words, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(10);

    const exited = exitedWithin(gateway);
    // Draining, it still listens: a request is told to come back, not refused.
    // (A request that came before the stop signal did is answered as usual: asked until one is told.)
    const ask = () => fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).catch(() => undefined);
    let meanwhile: Response | undefined;
    await expect.poll(async () => (meanwhile = await ask())?.status, { timeout: 5000, interval: 10 }).toBe(503);
    expect(Number(meanwhile!.headers.get('retry-after'))).toBeGreaterThan(0);

    const { code, ms } = await exited;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(6000);
    expect(gateway.logs).toContainEqual(expect.objectContaining({ requests: 1, msg: expect.stringMatching(/shutdown deadline passed/) }));
    const { words, last } = eventsOf(await stream.ended);
    expect(words).toBeGreaterThanOrEqual(10);
    expect(words).toBeLessThan(200);
    expect(last).toMatch(/the gateway stopped before this answer was complete/);
    // The job was cancelled with its client's request, as the gateway's cut, not a client's
    // leaving (503 with the reason, not 499): its worker logs and charges what it used.
    await expect.poll(() => logRow(stack, 'cut-by-gateway-stop'), { timeout: 10_000 }).toMatchObject({
      status: 503, error_code: 'overloaded', error_message: expect.stringMatching(/the gateway stopped before this answer was complete/), streamed: true,
    });
    const row = await logRow(stack, 'cut-by-gateway-stop');
    console.log(`gateway stopped in ${ms} ms; the client had ${words} of 200 words; the row: ${row.status}, ${row.completion_tokens} completion tokens`);
    // Charged what was delivered, by the worker's estimate (upstream usage comes only at the end).
    expect(row.completion_tokens).toBeGreaterThan(words / 2);
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${id}`)).body.data.used_quota, { timeout: 30_000 }).toBe(row.total_tokens);
  }, 60_000);
});

describe("a stream past the gateway's reply deadline", () => {
  it("ends a stream at the gateway's reply deadline with an error event, and logs it 504, not as a client that left", async ({ stack, upstream, channel, apiKey }) => {
    await stack.add('completion-worker');
    const gateway = await stack.add('gateway', { REQUEST_TIMEOUT_MS: '3000' });
    await channel(await upstream.openai({ text: TEXT, chunkDelayMs: 50 }), ['slow']);
    const { key } = await apiKey();
    const stream = await slowStream(gateway.url, key, 'cut-by-reply-deadline');
    const { words, last } = eventsOf(await stream.ended);
    expect(words).toBeGreaterThanOrEqual(10);
    expect(words).toBeLessThan(200);
    expect(last).toMatch(/did not complete within/);
    const row = await loggedRow(stack, 'cut-by-reply-deadline');
    expect(row).toMatchObject({ status: 504, error_code: 'timeout', error_message: expect.stringMatching(/did not complete within its deadline/), streamed: true });
    // Charged what was delivered, as a cut by its client would be.
    expect(row.completion_tokens).toBeGreaterThan(words / 2);
    await gateway.stop('SIGTERM');
  }, 60_000);
});
