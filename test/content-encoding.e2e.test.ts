/**
 * Compressed request bodies: gzip (as some SDKs and proxies send them), deflate and br are
 * decompressed, with the body limit on the decompressed size (a zip bomb is a 413); any other
 * coding is a 415 that says which are accepted. Real gateway and worker processes, the openai
 * SDK and raw HTTP.
 */
import { request as httpRequest } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import OpenAI from 'openai';
import { expect } from 'vitest';
import { stackTest } from '@gateway/testkit/fixtures';

const BODY_LIMIT = 1024 * 1024;
const BUDGET_PER_KEY = 4 * BODY_LIMIT;
const test = stackTest({ workers: ['completion-worker'], env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), BODY_BUDGET_PER_KEY_BYTES: String(BUDGET_PER_KEY) } });

/** A fetch that sends every JSON body gzipped, as a compressing proxy or SDK middleware would. */
const gzipFetch: typeof fetch = async (url, init) => {
  const body = typeof init?.body === 'string' ? gzipSync(init.body) : init?.body;
  const headers = new Headers(init?.headers);
  if (body !== init?.body) headers.set('content-encoding', 'gzip');
  return fetch(url, { ...init, body, headers });
};

/** A GET with a body (fetch will not send one): its status, or 0 when the connection failed. */
const getWithBody = (url: string, body: string, headers: Record<string, string>) =>
  new Promise<number>((resolve) => {
    const req = httpRequest(url, { method: 'GET', headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });

const post = (url: string, body: Uint8Array | string, headers: Record<string, string>) =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

test('the openai SDK sending gzip gets its completion', async ({ stack, upstream, channel, apiKey }) => {
  await channel(await upstream.openai(), ['m']);
  const { key } = await apiKey();
  const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, fetch: gzipFetch });
  const completion = await client.completions.create({ model: 'm', prompt: 'hello '.repeat(1000) });
  expect(completion.choices[0]!.text).toBeTruthy();
});

test("a compressed body counts against its key's byte budget as what it may inflate to, not its length on the wire", async ({ stack, upstream, channel, apiKey }) => {
  await channel(await upstream.openai({ delayMs: 1500 }), ['m']);
  const { key } = await apiKey();
  // 900 KB of prompt in about 1 KB of gzip, ten at once: on the wire 10 KB, inflated 9 MB.
  const bomb = gzipSync(JSON.stringify({ model: 'm', prompt: 'z'.repeat(900 * 1024) }));
  const answers = await Promise.all(Array.from({ length: 10 }, () =>
    post(`${stack.gateway.url}/v1/completions`, bomb, { authorization: `Bearer ${key}`, 'content-encoding': 'gzip' })));
  const statuses = answers.map((a) => a.status);
  // The budget holds four bodies of up to the route's limit; the rest wait their turn (429, Retry-After).
  expect(statuses.filter((s) => s === 200).length, statuses.join()).toBeLessThanOrEqual(BUDGET_PER_KEY / BODY_LIMIT);
  expect(statuses.filter((s) => s === 200).length, statuses.join()).toBeGreaterThan(0);
  for (const answer of answers.filter((a) => a.status !== 200)) {
    expect(answer.status).toBe(429);
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  }
});

test('deflate and br too, on the model and management APIs', async ({ stack, upstream, channel, apiKey }) => {
  await channel(await upstream.openai(), ['m']);
  const { key } = await apiKey();
  const body = JSON.stringify({ model: 'm', prompt: 'hi' });
  for (const [coding, bytes] of [['deflate', deflateSync(body)], ['br', brotliCompressSync(body)], ['GZIP', gzipSync(body)]] as const) {
    const answer = await post(`${stack.gateway.url}/v1/completions`, bytes, { authorization: `Bearer ${key}`, 'content-encoding': coding });
    expect(answer.status, coding).toBe(200);
  }
  const created = await post(`${stack.gateway.url}/api/token/`, gzipSync(JSON.stringify({ name: 'zipped' })), { authorization: `Bearer ${stack.adminToken}`, 'content-encoding': 'gzip' });
  expect(created.status).toBe(200);
});

test('another coding is a 415 naming those accepted, in each API format', async ({ stack, apiKey }) => {
  const { key } = await apiKey();
  const openai = await post(`${stack.gateway.url}/v1/completions`, 'xx', { authorization: `Bearer ${key}`, 'content-encoding': 'compress' });
  expect(openai.status).toBe(415);
  expect(openai.headers.get('accept-encoding')).toMatch(/gzip, deflate, br/);
  expect(((await openai.json()) as any).error.message).toMatch(/Content-Encoding "compress" is not accepted.*gzip, deflate, br/);
  const gemini = await post(`${stack.gateway.url}/v1beta/models/m:generateContent`, 'xx', { 'x-goog-api-key': key, 'content-encoding': 'gzip, gzip' });
  expect(gemini.status).toBe(415);
  expect(((await gemini.json()) as any).error.status).toBeTruthy();
  // Names every object has are no codings either (Content-Encoding: constructor was a 500).
  for (const coding of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    const inherited = await post(`${stack.gateway.url}/v1/completions`, 'xx', { authorization: `Bearer ${key}`, 'content-encoding': coding });
    expect(inherited.status, coding).toBe(415);
  }
  const corrupt = await post(`${stack.gateway.url}/v1/completions`, 'not gzip at all', { authorization: `Bearer ${key}`, 'content-encoding': 'gzip' });
  expect(corrupt.status).toBe(400);
  expect(((await corrupt.json()) as any).error.message).toMatch(/not valid gzip/);
});

test('a zip bomb is a 413 as soon as it passes the limit, in gzip and in br', async ({ stack, apiKey }) => {
  const { key } = await apiKey();
  // 64 MiB of JSON-ish text (64 times the limit) that compresses to under 100 KiB.
  const inflated = Buffer.alloc(64 * 1024 * 1024, ' ');
  const bombs = [['gzip', gzipSync(inflated, { level: 9 })], ['br', brotliCompressSync(inflated)]] as const;
  for (const [coding, bomb] of bombs) {
    expect(bomb.length).toBeLessThan(BODY_LIMIT);
    const started = Date.now();
    const answer = await post(`${stack.gateway.url}/v1/completions`, bomb, { authorization: `Bearer ${key}`, 'content-encoding': coding });
    expect(answer.status, coding).toBe(413);
    expect(((await answer.json()) as any).error.message).toMatch(/decompresses to more than/);
    expect(Date.now() - started, coding).toBeLessThan(2000);
  }
  // The gateway inflated at most about its limit, not 64 MiB, per bomb.
  const metrics = await (await fetch(`${stack.gateway.url}/metrics`, { headers: { authorization: `Bearer ${stack.adminToken}` } })).text();
  const rss = Number(/process_resident_memory_bytes(?:\{[^}]*\})? (\d+)/.exec(metrics)![1]);
  expect(rss).toBeLessThan(200 * 1024 * 1024);
  console.log(`[zip bomb] 64 MiB in gzip and br: 413 each; gateway RSS ${Math.round(rss / 1024 / 1024)} MiB after`);
});

test('a body that is not what its Content-Encoding says, sent where no route reads it, is answered and the gateway goes on', async ({ stack, apiKey }) => {
  const { key } = await apiKey();
  // GET and HEAD bodies are never parsed: readiness (which waits on Redis before it answers),
  // health, and an unknown path; each with a "gzip" body that is not gzip, and br that is not br.
  for (const coding of ['gzip', 'br']) {
    for (const path of ['/readyz', '/healthz', '/v1/models', '/no/such/path']) {
      const status = await getWithBody(`${stack.gateway.url}${path}`, 'hello, not compressed', { 'content-encoding': coding, authorization: `Bearer ${key}` });
      expect(status, `${coding} ${path}`).toBeGreaterThan(0);
      expect(status, `${coding} ${path}`).toBeLessThan(500);
    }
  }
  await new Promise((resolve) => setTimeout(resolve, 200)); // a window on purpose: a crash would come in it
  expect(stack.gateway.child.exitCode, 'the gateway is still running').toBeNull();
  expect((await fetch(`${stack.gateway.url}/readyz`)).status).toBe(200);
});

