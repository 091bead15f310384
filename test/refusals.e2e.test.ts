/**
 * Refusals in the request log (issue 40): real gateway and worker processes, Redis, PostgreSQL,
 * mock upstreams and the official `openai` SDK. Each refusal the model routes make is a row
 * found by its request id and its status, the key never in clear; a flood of bad keys, one key
 * or many from one address, adds a bounded number of rows whose counts add up to the requests.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import pg from 'pg';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';
import { caught, clientAt, type Stack } from '@gateway/testkit';

// One window for the whole file (an hour): the rows a flood adds do not depend on when it runs.
const it = stackTest({ database: true, workers: ['completion-worker'], env: { REFUSAL_LOG_WINDOW_MS: '3600000', CHANNEL_FAILURES_BEFORE_COOLDOWN: '1000' } });

let seq = 0;
const client = (stack: Stack, key: string, requestId: string) => new OpenAI({
  baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000, defaultHeaders: { 'x-request-id': requestId },
});

describe('refusals in the request log', () => {
  it('has a row for each refusal the SDK gets, found by its request id and its status, in the console too', async ({ stack, upstream, channel, apiKey }) => {
    const model = `refused-${++seq}`;
    const mock = await upstream.openai({ text: 'hello' });
    await channel(mock, [model, `${model}-other`]);
    // Holds the one request a key with max_in_flight 1 may have, while the next is refused.
    const slow = await upstream.openai({ text: 'slow', delayMs: 5_000 });
    await channel(slow, [`${model}-slow`]);
    const badKey = 'sk-refused0123456789abcdefghijklmnopqrstuvwxyzABCDEF';
    const narrow = await apiKey({ models: [`${model}-other`] });
    const good = await apiKey();
    const spent = await apiKey({ unlimited_quota: false, remain_quota: 1 });
    const limited = await apiKey({ rpm_limit: 1 });
    const single = await apiKey({ max_in_flight: 1 });
    // A budget in money of a millionth of a dollar, spent by one request at this price.
    await stack.adminData('PUT', '/api/price/', { model, input: 100, output: 100 });
    const broke = await apiKey({ max_budget: 0.000001 });
    await client(stack, broke.key, `budget-spend-${seq}`).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await client(stack, spent.key, `spend-${seq}`).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await client(stack, limited.key, `first-${seq}`).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await expect.poll(() => mock.requests.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    await expect.poll(async () => (await stack.adminData('GET', `/api/token/${spent.id}`)).remain_quota, { timeout: 15_000 }).toBeLessThanOrEqual(0);

    const cases = [
      { id: `bad-key-${seq}`, key: badKey, body: { model }, status: 401, code: 'invalid_api_key', headersOnly: true },
      { id: `not-allowed-${seq}`, key: narrow.key, body: { model }, status: 403, code: 'permission_denied', token: narrow.id },
      { id: `temperature-${seq}`, key: good.key, body: { model, temperature: 7 }, status: 400, code: 'invalid_request', token: good.id },
      // Refused by the relay after the body was read, with the job not yet made.
      { id: `priority-${seq}`, key: good.key, body: { model }, headers: { 'x-priority': 'urgent' }, status: 400, code: 'invalid_request', token: good.id },
      { id: `quota-${seq}`, key: spent.key, body: { model }, status: 429, code: 'insufficient_quota', token: spent.id, headersOnly: true },
      { id: `budget-${seq}`, key: broke.key, body: { model }, status: 429, code: 'insufficient_quota', token: broke.id, headersOnly: true },
      { id: `rpm-${seq}`, key: limited.key, body: { model }, status: 429, code: 'rate_limited', token: limited.id },
      { id: `in-flight-${seq}`, key: single.key, body: { model }, status: 429, code: 'rate_limited', token: single.id, headersOnly: true },
    ];
    const busy = client(stack, single.key, `busy-${seq}`).chat.completions.create({ model: `${model}-slow`, messages: [{ role: 'user', content: 'hi' }] });
    await expect.poll(() => slow.requests.length, { timeout: 15_000 }).toBe(1);
    for (const c of cases) {
      const error = await caught(client(stack, c.key, c.id).chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], ...c.body } as any, { headers: c.headers }));
      expect(error, c.id).toBeInstanceOf(OpenAI.APIError);
      expect([error.status, error.headers.get('x-request-id')], c.id).toEqual([c.status, c.id]);
    }
    await busy;

    for (const c of cases) {
      const row = await loggedRow(stack, c.id);
      expect(row, c.id).toMatchObject({
        request_id: c.id, status: c.status, error_code: c.code, error_message: expect.any(String), route: '/v1/chat/completions',
        count: 1, client_ip: '127.0.0.1', attempts: [], total_tokens: 0, ...(c.token ? { token_id: c.token } : { token_id: 0, user_id: 0 }),
      });
      // The model, where the body was read: a bad key, a spent quota, a cap on requests in flight
      // are refused from the headers alone, and their bodies are never parsed.
      expect(row.model, c.id).toBe(c.headersOnly ? '' : model);
      const byStatus = (await stack.admin('GET', `/api/log/?status=${c.status}&page_size=100`)).body.data;
      expect(byStatus.items.map((r: any) => r.request_id), c.id).toContain(c.id);
    }
    const bad = await loggedRow(stack, `bad-key-${seq}`);
    expect(bad.credential).toMatch(/^sk-\w{2}\*{8}\w{4}#[0-9a-f]{8}$/);
    expect(JSON.stringify(bad)).not.toContain(badKey.slice(6, 40));
    // The operations console reads the same rows.
    const shown = await stack.admin('GET', `/admin/api/log?request_id=temperature-${seq}`);
    expect(shown.body.data.items[0]).toMatchObject({ status: 400, error_code: 'invalid_request', count: 1 });

    // A Gemini route's refusal, its key in Gemini's header: the model and method from its path.
    const gemini = await fetch(`${stack.gateway.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
      method: 'POST', headers: { 'x-goog-api-key': `${badKey}-gemini`, 'content-type': 'application/json', 'x-request-id': `gemini-${seq}` },
      body: JSON.stringify({ contents: [{ parts: [{ text: 'hi' }] }] }),
    });
    expect(gemini.status).toBe(401);
    expect(await loggedRow(stack, `gemini-${seq}`)).toMatchObject({
      status: 401, route: '/v1beta/models/{model}:streamGenerateContent', model, streamed: true, token_id: 0, credential: expect.stringMatching(/#[0-9a-f]{8}$/),
    });
  });

  it('has a row for a 503 of a queue too long to serve the request in time', async ({ stack, apiKey }) => {
    // This stack runs no audio worker: speech jobs wait, and past ADMISSION_MAX_BACKLOG a tenant
    // that already has jobs waiting is refused.
    const gateway = await stack.add('gateway', { ADMISSION_MAX_BACKLOG: '1' });
    const key = await apiKey();
    const waiting = new AbortController();
    const speech = { model: `tts-${++seq}`, input: 'hi', voice: 'alloy' as const };
    const held = [1, 2].map((n) => fetch(`${gateway.url}/v1/audio/speech`, {
      method: 'POST', signal: waiting.signal, body: JSON.stringify(speech),
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'x-request-id': `held-${seq}-${n}` },
    }).catch(() => undefined));
    try {
      let tries = 0;
      let refusedId = '';
      await expect.poll(async () => {
        refusedId = `overloaded-${seq}-${++tries}`;
        const speaker = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key.key, maxRetries: 0, timeout: 2_000, defaultHeaders: { 'x-request-id': refusedId } });
        return (await caught(speaker.audio.speech.create(speech))).status;
      }, { timeout: 30_000, interval: 300 }).toBe(503);
      expect(await loggedRow(stack, refusedId)).toMatchObject({ status: 503, error_code: 'overloaded', route: '/v1/audio/speech', model: speech.model, token_id: key.id });
    } finally {
      waiting.abort();
      await Promise.all(held);
      await gateway.stop();
    }
  });

  it('counts a flood of 2,000 refusals of one bad key, then of 2,000 different bad keys from one address, on a bounded number of rows', async ({ stack }) => {
    const address = `127.0.0.${40 + ++seq}`;
    const from = clientAt(address);
    const db = new pg.Client({ connectionString: stack.postgres!.url });
    await db.connect();
    const flood = async (keyOf: (i: number) => string) => {
      const started = Date.now();
      let next = 0;
      const statuses: Record<number, number> = {};
      await Promise.all(Array.from({ length: 32 }, async () => {
        while (next < 2_000) {
          const i = next++;
          const answer = await from.postJson(`${stack.gateway.url}/v1/chat/completions`, { model: 'm', messages: [] }, { authorization: `Bearer ${keyOf(i)}` });
          statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        }
      }));
      return { ms: Date.now() - started, statuses };
    };
    const logged = async () => (await db.query(
      `SELECT count(*)::int AS rows, coalesce(sum(count), 0)::int AS requests, count(*) FILTER (WHERE credential = '*')::int AS many
       FROM request_log WHERE client_ip = $1`, [address])).rows[0];
    try {
      const one = await flood(() => 'sk-flood-one-key-0123456789abcdefghijklmnop');
      expect(one.statuses).toEqual({ 401: 2_000 });
      await expect.poll(logged, { timeout: 30_000, interval: 500 }).toEqual({ rows: 1, requests: 2_000, many: 0 });
      const many = await flood((i) => `sk-flood-${i}-${'x'.repeat(40)}`);
      expect(many.statuses).toEqual({ 401: 2_000 });
      // REFUSAL_LOG_KEYS_PER_ADDRESS (10) keys with rows of their own, then one row counts the rest.
      await expect.poll(logged, { timeout: 30_000, interval: 500 }).toEqual({ rows: 11, requests: 4_000, many: 1 });
      console.log(`[refusals] 2,000 of one bad key in ${one.ms} ms, 2,000 different bad keys in ${many.ms} ms: ${JSON.stringify(await logged())}`);
    } finally {
      await db.end();
      await from.close();
    }
  }, 180_000);
});
