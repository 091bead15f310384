/**
 * Text completions end to end: real Redis, real admin-worker, completion-worker and gateway
 * processes, mock OpenAI upstreams over real HTTP, and the official `openai` SDK as the client
 * with nothing changed but `baseURL` and `apiKey`.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { caught, postJson } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker'],
  env: {
    CHANNEL_FAILURES_BEFORE_COOLDOWN: '2',
    CHANNEL_COOLDOWN_MS: '60000',
    CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: '2',
    REQUEST_TIMEOUT_MS: '15000',
  },
  channelDefaults: { timeout_ms: 3000 },
})
  .extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }))
  .extend('post', async ({ stack }) => (body: unknown, key: string) => postJson(`${stack.gateway.url}/v1/completions`, body, { authorization: `Bearer ${key}` }));

let seq = 0;
const uniqueModel = () => `model-${++seq}`;

describe('a plain completion', () => {
  it('answers in the OpenAI format with the model asked for and full usage, charged to key, user and channel', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    const upstreamKey = 'sk-upstream-plain-completion';
    const ch = await channel(mock, [`${model}-upstream`], { model_mapping: { [model]: `${model}-upstream` }, key: upstreamKey });
    const key = await apiKey();
    const before = (await stack.admin('GET', '/api/user/self')).body.data;
    // The upstream takes 40 ms: the channel's response_time must say so.
    mock.setBehaviour({ delayMs: 40 });

    const reply = await client(key.key).completions.create({ model, prompt: 'Say this is a test', max_tokens: 7, temperature: 0, vendor_hint: 'x' } as any);
    expect(reply).toMatchObject({
      object: 'text_completion',
      model,
      choices: [{ text: 'This is a mock completion.', index: 0, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: 5, completion_tokens: 5, total_tokens: 10,
      },
    });
    expect(reply.id).toEqual(expect.any(String));
    expect(reply.created).toEqual(expect.any(Number));

    const sent = mock.requests[0]!;
    expect(sent.body).toMatchObject({ model: `${model}-upstream`, prompt: 'Say this is a test', max_tokens: 7, vendor_hint: 'x' });
    expect(sent.authorization).toBe(`Bearer ${upstreamKey}`);

    // Charged off the reply path, within USAGE_FLUSH_MS.
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${key.id}`)).body.data.used_quota).toBe(10);
    const after = (await stack.admin('GET', '/api/user/self')).body.data;
    expect(after.used_quota - before.used_quota).toBe(10);
    expect(after.request_count - before.request_count).toBe(1);
    const stored = (await stack.admin('GET', `/api/channel/${ch.id}`)).body.data;
    expect(stored.used_quota).toBe(10);
    expect(stored.response_time).toBeGreaterThanOrEqual(40);
    expect(stored.response_time).toBeLessThan(5000);
    expect(JSON.stringify(stored)).not.toContain(upstreamKey);
  });

  it('passes n, echo and logprobs through as the upstream produced them, and every prompt form', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const reply = await client(key).completions.create({ model, prompt: 'Hi there', n: 2, echo: true, logprobs: 1, best_of: 2 });
    expect(reply.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(reply.choices[0]!.text.startsWith('Hi there')).toBe(true);
    expect(reply.choices[0]!.logprobs).toMatchObject({ tokens: expect.any(Array) });
    for (const prompt of [['a b', 'c'], [1, 2, 3], [[1, 2], [3]]]) {
      const r = await client(key).completions.create({ model, prompt: prompt as any });
      expect(r.choices[0]!.text).toBe('This is a mock completion.');
    }
    expect(mock.requests.at(-1)!.body.prompt).toEqual([[1, 2], [3]]);
  });
});

describe('streaming', () => {
  it('relays chunks as the upstream sends them, with a usage chunk when asked, then [DONE]', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    mock.setBehaviour({ text: 'one two three four', chunkDelayMs: 150 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();

    const stream = await client(key).completions.create({ model, prompt: 'count', stream: true, stream_options: { include_usage: true } });
    const arrivals: number[] = [];
    const chunks: OpenAI.Completions.Completion[] = [];
    for await (const chunk of stream) {
      arrivals.push(Date.now());
      chunks.push(chunk);
    }
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe('one two three four');
    expect(chunks.every((c) => c.object === 'text_completion' && c.model === model)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 });
    // Relayed as produced: the chunks are spread over the upstream's ~600 ms, not bunched at its end.
    expect(arrivals.at(-2)! - arrivals[0]!).toBeGreaterThanOrEqual(400);
  });

  it('is plain SSE ending with data: [DONE], without usage unless asked (yet still charged)', async ({ stack, upstream, channel, apiKey, post }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const reply = await post({ model, prompt: 'hello', stream: true }, key.key);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('text/event-stream');
    const events = reply.text.split('\n\n').filter(Boolean);
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(reply.text).not.toContain('"usage"');
    // The upstream was asked for usage anyway, so the request is charged.
    expect(mock.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${key.id}`)).body.data.used_quota).toBe(6);
  });

  it('ends the stream with an error event when the upstream fails after the first chunk, without failing over', async ({ upstream, channel, apiKey, client }) => {
    const [breaking, spare] = [await upstream.openai(), await upstream.openai()];
    breaking.setBehaviour({ text: 'a b c d e f', breakAfterChunks: 2, chunkDelayMs: 20 });
    const model = uniqueModel();
    await channel(breaking, [model], { priority: 10 });
    await channel(spare, [model]);
    const { key } = await apiKey();
    const stream = await client(key).completions.create({ model, prompt: 'x', stream: true });
    const texts: string[] = [];
    const error = await caught((async () => {
      for await (const chunk of stream) texts.push(chunk.choices[0]!.text);
    })());
    expect(texts).toEqual(['a', ' b']);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.message).toMatch(/upstream/);
    expect(spare.requests.length).toBe(0);
  });
});

describe('errors, as the SDK surfaces them', () => {
  it('AuthenticationError for an unknown key, and for a key revoked a moment ago', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const bad = await caught(client('sk-unknown').completions.create({ model, prompt: 'x' }));
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(bad.status).toBe(401);
    expect(bad.code).toBe('invalid_api_key');
    expect(bad.error).toMatchObject({ type: 'invalid_request_error', param: null });

    const key = await apiKey();
    await client(key.key).completions.create({ model, prompt: 'x' });
    expect((await stack.admin('DELETE', `/api/token/${key.id}`)).status).toBe(200);
    const revoked = await caught(client(key.key).completions.create({ model, prompt: 'x' }));
    expect(revoked).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(mock.requests.length).toBe(1);
  });

  it('BadRequestError naming the field, for every kind of bad input', async ({ apiKey, client, post }) => {
    const { key } = await apiKey();
    const temperature = await caught(client(key).completions.create({ model: 'm', prompt: 'x', temperature: 3 }));
    expect(temperature).toBeInstanceOf(OpenAI.BadRequestError);
    expect(temperature.param).toBe('temperature');
    const cases: [unknown, string][] = [
      [{ prompt: 'x' }, 'model'],
      [{ model: 'm' }, 'prompt'],
      [{ model: 'm', prompt: 'x', stop: ['1', '2', '3', '4', '5'] }, 'stop'],
      [{ model: 'm', prompt: 'x', n: 2, best_of: 1 }, 'best_of'],
      [{ model: 'm', prompt: 'x', stream: true, best_of: 3 }, 'best_of'],
      [{ model: 'm', prompt: 'x', stream_options: { include_usage: true } }, 'stream_options'],
      [{ model: 'm', prompt: 'x', logprobs: 9 }, 'logprobs'],
      // An output length under another name that is no number of tokens (-1: no limit, to llama.cpp).
      [{ model: 'm', prompt: 'x', n_predict: -1 }, 'n_predict'],
      [{ model: 'm', prompt: 'x', options: { num_predict: 'all' } }, 'options.num_predict'],
    ];
    for (const [body, param] of cases) {
      const reply = await post(body, key);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.json.error).toMatchObject({ type: 'invalid_request_error', param, code: 'invalid_request' });
    }
  });

  it('PermissionDeniedError for a model the key may not use, NotFoundError for a model nobody serves', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const limited = await apiKey({ unlimited_quota: true, models: ['something-else'] });
    const denied = await caught(client(limited.key).completions.create({ model, prompt: 'x' }));
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const { key } = await apiKey();
    const missing = await caught(client(key).completions.create({ model: 'no-such-model', prompt: 'x' }));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.code).toBe('model_not_found');
    expect(mock.requests.length).toBe(0);
  });

  it('RateLimitError with Retry-After when every channel is rate-limited; 503 with Retry-After when none is enabled', async ({ upstream, channel, apiKey, client, post }) => {
    const limited = await upstream.openai();
    // Rate-limited for longer than the request may wait (a shorter wait is waited out: burst.e2e).
    limited.setBehaviour({ status: 429, retryAfter: 30 });
    const model = uniqueModel();
    await channel(limited, [model]);
    const { key } = await apiKey();
    const error = await caught(client(key).completions.create({ model, prompt: 'x' }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.headers.get('retry-after')).toBe('30');

    const off = await upstream.openai();
    const offModel = uniqueModel();
    await channel(off, [offModel], { status: 2 });
    const none = await post({ model: offModel, prompt: 'x' }, key);
    expect(none.status).toBe(503);
    expect(Number(none.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(none.json.error).toMatchObject({ type: 'server_error', code: 'no_channel' });
  });

  it("returns the upstream's own 400 as it is, without trying another channel", async ({ upstream, channel, apiKey, client }) => {
    const [strict, spare] = [await upstream.openai(), await upstream.openai()];
    strict.setBehaviour({ status: 400, body: { error: { message: "This model's maximum context length is 4097 tokens", type: 'invalid_request_error', param: 'prompt', code: 'context_length_exceeded' } } });
    const model = uniqueModel();
    await channel(strict, [model], { priority: 5 });
    await channel(spare, [model]);
    const { key } = await apiKey();
    const error = await caught(client(key).completions.create({ model, prompt: 'x' }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.code).toBe('context_length_exceeded');
    expect(error.param).toBe('prompt');
    expect(spare.requests.length).toBe(0);
  });
});

describe('routing', () => {
  it('fails over when the first channel returns 500, then hangs; then cools it down', async ({ upstream, channel, apiKey, client }) => {
    const [flaky, steady] = [await upstream.openai(), await upstream.openai()];
    flaky.next({ status: 500 });
    flaky.setBehaviour({ hang: true });
    const model = uniqueModel();
    await channel(flaky, [model], { priority: 10, timeout_ms: 300 });
    await channel(steady, [model], { priority: 0 });
    const openai = client((await apiKey()).key);

    const first = await openai.completions.create({ model, prompt: 'x' });
    expect(first.choices[0]!.text).toBe('This is a mock completion.');
    expect([flaky.requests.length, steady.requests.length]).toEqual([1, 1]);

    const started = Date.now();
    await openai.completions.create({ model, prompt: 'x' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect([flaky.requests.length, steady.requests.length]).toEqual([2, 2]);
    await flaky.waitFor((m) => m.aborted === 1);

    // Two failures in a row (CHANNEL_FAILURES_BEFORE_COOLDOWN=2): the channel cools down.
    for (let i = 0; i < 5; i++) await openai.completions.create({ model, prompt: 'x' });
    expect([flaky.requests.length, steady.requests.length]).toEqual([2, 7]);
  });

  it('auto-disables a channel whose upstream refuses its key twice in a row, with the reason', async ({ stack, upstream, channel, apiKey, client }) => {
    const [refusing, steady] = [await upstream.openai(), await upstream.openai()];
    refusing.setBehaviour({ status: 401, body: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
    const model = uniqueModel();
    const bad = await channel(refusing, [model], { priority: 10 });
    await channel(steady, [model]);
    const openai = client((await apiKey()).key);
    await openai.completions.create({ model, prompt: 'x' });
    expect((await stack.admin('GET', `/api/channel/${bad.id}`)).body.data.status).toBe(1);
    await openai.completions.create({ model, prompt: 'x' });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(3);
    expect(stored.status_reason).toMatch(/401/);
    for (let i = 0; i < 3; i++) await openai.completions.create({ model, prompt: 'x' });
    expect(refusing.requests.length).toBe(2);
  });

  it("lets no tenant disable, cool down or rest a shared channel by what it sends: a 403 for its content, a 429 for its size, time-outs of the long outputs it asks for", async ({ stack, upstream, channel, apiKey, client }) => {
    const [moderating, backup] = [await upstream.openai({ delayMs: 0 }), await upstream.openai()];
    const model = uniqueModel();
    const shared = await channel(moderating, [model], { priority: 10, timeout_ms: 600 });
    await channel(backup, [model]);
    // Two tenants: users of their own.
    const tenantKey = async (name: string) => {
      const user = await stack.adminData('POST', '/api/user/', { username: `${name}${model.slice(-4)}`, password: 'tenant-password' });
      return (await stack.adminData('POST', '/api/token/', { name, user_id: user.id, unlimited_quota: true })).key as string;
    };
    const attacker = client(await tenantKey('attacker'));
    const other = client(await tenantKey('other'));
    const refusal = (promise: Promise<unknown>) => promise.then(() => 200, (e: InstanceType<typeof OpenAI.APIError>) => e.status);
    // Flagged input: the moderating upstream answers 403, the backup too; the caller gets the 403.
    const flagged = { status: 403, body: { error: { message: 'Your input was flagged by moderation', type: 'invalid_request_error', param: null, code: 'moderation' } } };
    for (let i = 0; i < 4; i++) {
      moderating.next(flagged);
      backup.next(flagged);
      expect(await refusal(attacker.completions.create({ model, prompt: 'flagged' }))).toBe(403);
    }
    // A 429 for its own size ("Request too large"), with a Retry-After of an hour: returned as it came, nothing rests.
    moderating.next({ status: 429, retryAfter: 3600, body: { error: { message: 'Request too large for gpt in organization org-x on tokens per min (TPM): Limit 10000, Requested 900000.', type: 'tokens', param: null, code: 'rate_limit_exceeded' } } });
    expect(await refusal(attacker.completions.create({ model, prompt: 'huge' }))).toBe(429);
    // Long outputs it asks for time out on the shared channel, twice (CHANNEL_FAILURES_BEFORE_COOLDOWN):
    // each fails over to the backup, and the shared channel cools down for this tenant alone.
    for (let i = 0; i < 2; i++) {
      moderating.next({ hang: true });
      expect(await refusal(attacker.completions.create({ model, prompt: 'write a book', max_tokens: 8000 }))).toBe(200);
    }
    const tried = moderating.requests.length;
    expect(await refusal(attacker.completions.create({ model, prompt: 'hello' }))).toBe(200);
    expect(moderating.requests.length, 'the tenant whose requests timed out skips the channel').toBe(tried);
    // The shared channel is enabled, not cooling, not resting for the others: the other tenant's request goes to it at once.
    expect((await stack.admin('GET', `/api/channel/${shared.id}`)).body.data.status).toBe(1);
    const started = Date.now();
    expect(await refusal(other.completions.create({ model, prompt: 'hello' }))).toBe(200);
    expect(moderating.requests.length).toBe(tried + 1);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('serves the highest priority tier only, split by weight', async ({ upstream, channel, apiKey, client }) => {
    const [light, heavy, low] = [await upstream.openai(), await upstream.openai(), await upstream.openai()];
    const model = uniqueModel();
    await channel(light, [model], { priority: 10, weight: 1 });
    await channel(heavy, [model], { priority: 10, weight: 3 });
    await channel(low, [model], { priority: 1, weight: 100 });
    const openai = client((await apiKey()).key);
    const total = 200;
    for (let sent = 0; sent < total; sent += 20) {
      await Promise.all(Array.from({ length: 20 }, () => openai.completions.create({ model, prompt: 'x' })));
    }
    expect(low.requests.length).toBe(0);
    expect(light.requests.length + heavy.requests.length).toBe(total);
    // Expected 25% (sd ≈ 3%); the bounds are ±3 sd.
    const share = light.requests.length / total;
    expect(share).toBeGreaterThan(0.15);
    expect(share).toBeLessThan(0.35);
  });

  it('never chooses channels of a tag disabled through the management API', async ({ stack, upstream, channel, apiKey, client }) => {
    const [t1, t2, other] = [await upstream.openai(), await upstream.openai(), await upstream.openai()];
    const model = uniqueModel();
    const tag = `tag-${model}`;
    await channel(t1, [model], { priority: 10, tag });
    await channel(t2, [model], { priority: 10, tag });
    await channel(other, [model], { priority: 0 });
    const openai = client((await apiKey()).key);
    for (let i = 0; i < 4; i++) await openai.completions.create({ model, prompt: 'x' });
    expect(t1.requests.length + t2.requests.length).toBe(4);

    const disabled = await stack.admin('POST', '/api/channel/tag/disabled', { tag });
    expect(disabled.body.data).toEqual({ count: 2 });
    await Promise.all(Array.from({ length: 40 }, () => openai.completions.create({ model, prompt: 'x' })));
    expect(t1.requests.length + t2.requests.length).toBe(4);
    expect(other.requests.length).toBe(40);
  });
});

describe('quota', () => {
  it('refuses a key out of quota with 429 insufficient_quota and x-should-retry: false, before any upstream call', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey({ unlimited_quota: false, remain_quota: 5 });
    await client(key.key).completions.create({ model, prompt: 'x' });
    await expect.poll(async () => {
      const token = (await stack.admin('GET', `/api/token/${key.id}`)).body.data;
      return [token.used_quota, token.remain_quota];
    }).toEqual([6, -1]);

    const error = await caught(client(key.key).completions.create({ model, prompt: 'x' }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.code).toBe('insufficient_quota');
    expect(error.type).toBe('insufficient_quota');
    expect(error.headers.get('x-should-retry')).toBe('false');
    expect(mock.requests.length).toBe(1);
  });

  it("refuses a user whose allowance is used up, whatever the key's quota", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const user = await stack.admin('POST', '/api/user/', { username: `q${seq}`, password: 'password-123', quota: 6 });
    const key = await apiKey({ unlimited_quota: true, user_id: user.body.data.id });
    await client(key.key).completions.create({ model, prompt: 'x' });
    await expect.poll(async () => {
      const after = (await stack.admin('GET', `/api/user/${user.body.data.id}`)).body.data;
      return [after.used_quota, after.request_count];
    }).toEqual([6, 1]);
    const error = await caught(client(key.key).completions.create({ model, prompt: 'x' }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.code).toBe('insufficient_quota');
    expect(mock.requests.length).toBe(1);
  });
});

describe('client disconnect', () => {
  it('aborts the upstream call of a request the client gave up on', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    mock.setBehaviour({ hang: true });
    const model = uniqueModel();
    await channel(mock, [model], { timeout_ms: 60_000 });
    const { key } = await apiKey();
    const controller = new AbortController();
    const pending = client(key).completions.create({ model, prompt: 'x' }, { signal: controller.signal });
    await mock.waitFor((m) => m.inFlight === 1);
    controller.abort();
    expect(await caught(pending)).toBeInstanceOf(OpenAI.APIUserAbortError);
    await mock.waitFor((m) => m.aborted === 1, 2000);
  });

  it('aborts the upstream stream when the client stops reading', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    mock.setBehaviour({ text: Array.from({ length: 50 }, (_, i) => `w${i}`).join(' '), chunkDelayMs: 100 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const stream = await client(key).completions.create({ model, prompt: 'x', stream: true });
    for await (const chunk of stream) {
      expect(chunk.choices[0]!.text).toBe('w0');
      break; // the SDK aborts the response
    }
    // The worker reads on for the usage event alone for up to 2 s (usage-grace.ts), then aborts.
    await mock.waitFor((m) => m.aborted === 1, 5000);
    expect(mock.inFlight).toBe(0);
  });
});
