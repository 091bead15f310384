/**
 * Isolation holds on the new doors (issue 41): the tenant checks of tenants.e2e.test.ts repeated
 * on Anthropic's Messages door (through `@anthropic-ai/sdk`), OpenAI's Responses door (the
 * `openai` SDK) and Gemini's chat door (`@google/genai`), beside chat completions: a model a
 * user may not use, a disabled key or user, a user's priority, a key's in-flight cap, a user's
 * requests a minute and its quota hold bind on every door and across them, one tenant's burst
 * on /v1/messages leaves another's first
 * request its fair turn, and another user's stored response is unknown on every route. Real
 * gateway, workers, Redis and PostgreSQL; the test kit's mock upstreams.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import { caught, type Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

/** Four worker slots, as tenants.e2e.test.ts, so a hog's burst waits in the queue as well as in the worker. */
const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { COMPLETION_CONCURRENCY: '4', REQUEST_TIMEOUT_MS: '60000' },
  channelDefaults: { timeout_ms: 30_000 },
});

let seq = 0;
const uniqueModel = () => `door-tenant-${++seq}`;

type Door = 'chat' | 'messages' | 'responses' | 'gemini';
const DOORS: Door[] = ['chat', 'messages', 'responses', 'gemini'];

/** What a door answered: 200, or the error's status and its kind in the door's own error shape. */
interface Outcome { status: number; kind?: string }

/** One request through `door`'s own SDK, asking for at most `maxTokens` tokens (16 is the least Responses takes). */
async function ask(stack: Stack, door: Door, key: string, model: string, maxTokens = 16): Promise<Outcome> {
  const base = stack.gateway.url;
  try {
    if (door === 'chat') await new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens });
    if (door === 'responses') await new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).responses.create({ model, input: 'hi', max_output_tokens: maxTokens, store: false });
    if (door === 'messages') await new Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 }).messages.create({ model, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] });
    if (door === 'gemini') await new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: base } }).models.generateContent({ model, contents: 'hi', config: { maxOutputTokens: maxTokens } });
    return { status: 200 };
  } catch (error) {
    // Each SDK parses its own wire format: OpenAI's error.code, Anthropic's error.error.type, Google's status.
    if (error instanceof OpenAI.APIError) return { status: error.status ?? 0, kind: String(error.code) };
    if (error instanceof Anthropic.APIError) return { status: error.status ?? 0, kind: (error.error as { error?: { type?: string } }).error?.type };
    if (error instanceof ApiError) return { status: error.status, kind: /"status":\s*"([A-Z_]+)"/.exec(error.message)?.[1] };
    throw error;
  }
}

/** The refusal each door's clients expect, by what was refused. */
const REFUSED = {
  model: { status: 403, chat: 'permission_denied', responses: 'permission_denied', messages: 'permission_error', gemini: 'PERMISSION_DENIED' },
  key: { status: 401, chat: 'invalid_api_key', responses: 'invalid_api_key', messages: 'authentication_error', gemini: 'UNAUTHENTICATED' },
  busy: { status: 429, chat: 'rate_limited', responses: 'rate_limited', messages: 'rate_limit_error', gemini: 'RESOURCE_EXHAUSTED' },
} as const;

const refusedAs = (why: keyof typeof REFUSED, door: Door): Outcome => ({ status: REFUSED[why].status, kind: REFUSED[why][door] });

/** A user of its own, as root makes it, with limits; and a key of it made by root. */
async function tenant(stack: Stack, limits: Record<string, unknown> = {}) {
  const user = await stack.adminData('POST', '/api/user/', { username: `dt${++seq}`, password: 'tenant-password', ...limits });
  const { id, key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { user, key: key as string, keyId: id as number };
}

async function timed<T>(work: Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work;
  return { ms: performance.now() - started, value };
}

describe('refusals on every door, each in its own format, before any upstream call', () => {
  it('a model the user may not use: refused on all four doors (and in a token count), and the user\'s batch priority kept on each', async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai();
    const [allowed, other] = [uniqueModel(), uniqueModel()];
    await channel(mock, [allowed, other]);
    const { user, key } = await tenant(stack);
    await stack.adminData('PUT', '/api/user/', { id: user.id, models: [allowed], priority: 'batch' });
    for (const door of DOORS) {
      expect(await ask(stack, door, key, other), door).toEqual(refusedAs('model', door));
      expect(await ask(stack, door, key, allowed), door).toEqual({ status: 200 });
    }
    // Nor does counting tokens tell such a key anything of the model.
    expect(await caught(new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0 }).messages.countTokens({ model: other, messages: [{ role: 'user', content: 'hi' }] }))).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(mock.requests.map((r) => r.body.model)).toEqual(DOORS.map(() => allowed));
    // The user's batch priority binds on every door: X-Priority cannot lift it.
    for (const door of DOORS) {
      const [path, headers, body] = {
        chat: ['/v1/chat/completions', { authorization: `Bearer ${key}` }, { model: allowed, messages: [{ role: 'user', content: 'hi' }] }],
        responses: ['/v1/responses', { authorization: `Bearer ${key}` }, { model: allowed, input: 'hi', store: false }],
        messages: ['/v1/messages', { 'x-api-key': key }, { model: allowed, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }],
        gemini: [`/v1beta/models/${allowed}:generateContent`, { 'x-goog-api-key': key }, { contents: [{ parts: [{ text: 'hi' }] }] }],
      }[door] as [string, Record<string, string>, unknown];
      const answer = await fetch(`${stack.gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-priority': 'interactive', ...headers }, body: JSON.stringify(body) });
      expect(answer.status, door).toBe(200);
      expect(answer.headers.get('x-priority'), door).toBe('batch');
    }
  });

  it('a disabled key, and every key of a disabled user: refused on all four doors', async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const keyOff = await tenant(stack);
    const userOff = await tenant(stack);
    for (const { key } of [keyOff, userOff]) for (const door of DOORS) expect(await ask(stack, door, key, model), door).toEqual({ status: 200 });
    const served = mock.requests.length;
    await stack.adminData('PUT', '/api/token/', { id: keyOff.keyId, status: 2 });
    await stack.adminData('PUT', '/api/user/', { id: userOff.user.id, status: 2 });
    for (const { key } of [keyOff, userOff]) {
      for (const door of DOORS) await expect.poll(() => ask(stack, door, key, model), { timeout: 5_000 }).toEqual(refusedAs('key', door));
      // What the door keeps and counts is shut too.
      expect(await caught(new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0 }).messages.countTokens({ model, messages: [{ role: 'user', content: 'hi' }] }))).toBeInstanceOf(Anthropic.AuthenticationError);
      expect(await caught(new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 }).responses.retrieve('resp_0123'))).toBeInstanceOf(OpenAI.AuthenticationError);
    }
    expect(mock.requests).toHaveLength(served);
  });
});

describe('limits that bind across doors', () => {
  it("a key's in-flight cap counts its requests on every door together", async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ delayMs: 1500 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey({ max_in_flight: 1 });
    for (const holder of DOORS) {
      const held = ask(stack, holder, key, model);
      await expect.poll(() => mock.inFlight, { timeout: 5_000 }).toBe(1);
      for (const door of DOORS.filter((d) => d !== holder)) expect(await ask(stack, door, key, model), `${door} beside ${holder}`).toEqual(refusedAs('busy', door));
      expect(await held).toEqual({ status: 200 });
    }
    expect(mock.requests).toHaveLength(DOORS.length);
    expect(mock.maxInFlight).toBe(1);
  });

  it("a user's requests a minute are counted across doors and keys", async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { user, key } = await tenant(stack, { rpm_limit: 4 });
    const { key: other } = await stack.adminData('POST', '/api/token/', { name: 'k2', user_id: user.id, unlimited_quota: true });
    for (const door of DOORS) expect(await ask(stack, door, door === 'chat' ? key : other, model), door).toEqual({ status: 200 });
    for (const door of DOORS) expect(await ask(stack, door, key, model), door).toEqual(refusedAs('busy', door));
    expect(mock.requests).toHaveLength(DOORS.length);
  });

  it("a user's quota hold on /v1/messages binds its other keys on every other door, and is given back when it settles", async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai({ delayMs: 1500, text: 'ok' });
    const model = uniqueModel();
    await channel(mock, [model]);
    // 500 a user: a request that may write 1,000 tokens holds more than all of it, so none
    // other may begin beside it (one is admitted while what is held is under the quota).
    const { user, key } = await tenant(stack, { quota: 500 });
    const { key: other } = await stack.adminData('POST', '/api/token/', { name: 'k2', user_id: user.id, unlimited_quota: true });
    const held = ask(stack, 'messages', key, model, 1000);
    await expect.poll(() => mock.inFlight, { timeout: 5_000 }).toBe(1);
    for (const door of DOORS) expect(await ask(stack, door, other, model, 1000), door).toEqual(refusedAs('busy', door));
    expect(await held).toEqual({ status: 200 });
    // Charged what it used (a few tokens), the rest of its hold given back: each door serves the next.
    for (const door of DOORS) expect(await ask(stack, door, other, model, 1000), door).toEqual({ status: 200 });
    expect(mock.requests).toHaveLength(1 + DOORS.length);
    const used = (await stack.adminData('GET', `/api/user/${user.id}`)).used_quota as number;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThan(100);
  });
});

describe('fair shares', () => {
  it("lets another tenant's first request through on each door within a turn while a hog has 60 waiting on /v1/messages on a 2-slot channel", async ({ stack, upstream, channel }) => {
    const mock = await upstream.anthropic({ delayMs: 300 });
    const model = uniqueModel();
    await channel(mock, [model], { max_concurrency: 2 });
    const hog = await tenant(stack);
    const steady = await tenant(stack);
    const burst = Array.from({ length: 60 }, () => ask(stack, 'messages', hog.key, model));
    await expect.poll(() => mock.inFlight, { timeout: 5_000 }).toBe(2);
    // First come, first served, each would wait for 58 hog requests at 2 a turn of 300 ms: 8.7 s.
    for (const door of ['messages', 'responses', 'gemini'] as const) {
      const { ms, value } = await timed(ask(stack, door, steady.key, model));
      console.log(`[door-fair] another tenant's ${door} request beside a hog's 60 messages on a 2-slot, 300 ms channel: ${Math.round(ms)} ms`);
      expect(value, door).toEqual({ status: 200 });
      // The bound tenants.e2e.test.ts sets for chat completions: a turn, and a loaded machine's delays.
      expect(ms, door).toBeLessThan(4000);
    }
    expect((await Promise.all(burst)).every((r) => r.status === 200)).toBe(true);
    expect(mock.maxInFlight).toBe(2);
  });
});

describe("another user's stored response", () => {
  it('is unknown on every route of the Responses door, background and streamed ones included, and runs on for its owner', async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai({ delayMs: 1000, text: 'Kept for its owner.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const owner = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: (await tenant(stack)).key, maxRetries: 0 });
    const strangerKey = (await tenant(stack)).key;
    const stranger = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: strangerKey, maxRetries: 0 });
    const running = await owner.responses.create({ model, input: 'Remember this.', background: true });
    expect(running.status).toMatch(/queued|in_progress/);
    for (const attempt of [
      () => stranger.responses.retrieve(running.id),
      () => stranger.responses.inputItems.list(running.id),
      () => stranger.responses.cancel(running.id),
      () => stranger.responses.delete(running.id),
      () => stranger.responses.create({ model, input: 'And now?', previous_response_id: running.id }),
    ]) expect(await caught(attempt())).toBeInstanceOf(OpenAI.NotFoundError);
    const followed = await fetch(`${stack.gateway.url}/v1/responses/${running.id}?stream=true&starting_after=0`, { headers: { authorization: `Bearer ${strangerKey}` } });
    expect(followed.status).toBe(404);
    expect(await followed.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    // Neither cancelled nor deleted by the stranger: it completes for its owner, and the stranger's turn never ran.
    await expect.poll(async () => (await owner.responses.retrieve(running.id)).status, { timeout: 15_000 }).toBe('completed');
    expect((await owner.responses.retrieve(running.id)).output_text).toBe('Kept for its owner.');
    expect(mock.requests).toHaveLength(1);
  });
});
