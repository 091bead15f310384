/**
 * Misbehaving upstreams (issue 10): what an upstream says is relayed without the channel's key
 * or anything shaped like one, an HTML page becomes a plain message, and replies and streamed
 * events past the gateway's limits end in a 502 instead of growing a worker's memory.
 */
import { describe, expect } from 'vitest';
import {
  MOCK_GEMINI_API_KEY, postJson, startMockGeminiUpstream, startMockOpenAIUpstream,
  type MockGeminiUpstream, type MockOpenAIUpstream, type Stack,
} from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker', 'audio-worker'],
  env: { UPSTREAM_MAX_REPLY_BYTES: '65536', UPSTREAM_MAX_EVENT_BYTES: '65536', REQUEST_TIMEOUT_MS: '15000' },
});

const CHANNEL_KEY = 'sk-chan-0123456789abcdefghijklmnop';
/** One upstream of each kind behind one channel each for the whole file: each test sets what it answers. */
let openai: MockOpenAIUpstream;
let gemini: MockGeminiUpstream;
let key: string;

it.beforeAll(async ({ stack }) => {
  openai = await startMockOpenAIUpstream();
  gemini = await startMockGeminiUpstream({ apiKey: 'AIzaSyD-channel-key-0123456789abcdefgh' });
  for (const channel of [
    { name: 'o', type: 'openai', key: CHANNEL_KEY, base_url: openai.url, models: ['text'] },
    { name: 'g', type: 'gemini', key: gemini.apiKey, base_url: gemini.url, models: ['speech'] },
  ]) expect((await stack.admin('POST', '/api/channel/', channel)).status).toBe(200);
  key = (await stack.admin('POST', '/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
});
it.afterAll(async () => {
  await Promise.all([openai?.close(), gemini?.close()]);
});

const complete = (stack: Stack, body: Record<string, unknown> = {}) =>
  postJson(`${stack.gateway.url}/v1/completions`, { model: 'text', prompt: 'hi', ...body }, { authorization: `Bearer ${key}` });

describe('upstream error text', () => {
  it("never carries the channel's key, or anything shaped like a key, to the client", async ({ stack }) => {
    openai.next({ status: 400, body: { error: { message: `Bad request for key ${CHANNEL_KEY}; try sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA or Bearer abc.def`, type: 'invalid_request_error', param: 'prompt', code: null } } });
    const answer = await complete(stack);
    expect(answer.status).toBe(400);
    expect(answer.text).not.toContain(CHANNEL_KEY);
    expect(answer.text).not.toContain('sk-proj-AAAA');
    expect(answer.text).not.toContain('abc.def');
    expect(answer.json.error.message).toMatch(/^Bad request for key \[redacted\]/);
  });

  it('redacts an error the upstream put inside a 200 reply too', async ({ stack }) => {
    openai.next({ okBody: { error: { message: `quota exceeded for ${CHANNEL_KEY}`, type: 'invalid_request_error', code: 400 } } });
    const answer = await complete(stack);
    expect(answer.status).toBe(400);
    expect(answer.text).not.toContain(CHANNEL_KEY);
    expect(answer.json.error.message).toMatch(/quota exceeded for \[redacted\]/);
  });

  it("takes the key out of a successful reply too, whole or streamed, in every form an upstream may reflect it in", async ({ stack }) => {
    const forms = [CHANNEL_KEY, Buffer.from(CHANNEL_KEY).toString('base64'), encodeURIComponent(`${CHANNEL_KEY}/+=`).slice(0, -9)];
    // A 200 that is a completion and also carries an error, and fields no wire format defines.
    openai.next({ okBody: {
      id: 'cmpl-1', object: 'text_completion', created: 1, model: 'text', choices: [{ index: 0, text: `ok ${CHANNEL_KEY}`, finish_reason: 'stop', logprobs: null }],
      error: { message: `your key Bearer ${CHANNEL_KEY}` }, note: forms.join(' '), usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    } });
    const whole = await complete(stack);
    expect(whole.status).toBe(200);
    for (const form of forms) expect(whole.text).not.toContain(form);
    expect(whole.json.choices[0].text).toBe('ok [redacted]');
    // Streamed: the text of each chunk.
    openai.next({ text: `echo ${forms.join(' ')} done` });
    const streamed = await complete(stack, { stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.text).toContain('data: [DONE]');
    for (const form of forms) expect(streamed.text).not.toContain(form);
    expect(streamed.text).toContain('[redacted]');
    // And an error that carries it encoded, or in another case.
    openai.next({ status: 401, body: { error: { message: `Incorrect API key provided: ${forms[1]} ${encodeURIComponent(CHANNEL_KEY)} ${CHANNEL_KEY.toUpperCase()}`, type: 'invalid_request_error', param: null, code: 'invalid_api_key' } } });
    const failed = await complete(stack);
    expect(failed.text).not.toContain(forms[1]);
    expect(failed.text).not.toContain(CHANNEL_KEY.toUpperCase());
  });

  it('turns an HTML page into a plain message that names the status', async ({ stack }) => {
    openai.setBehaviour({ status: 502, rawBody: `<!doctype html><html><body><h1>502 Bad Gateway</h1>${CHANNEL_KEY}</body></html>` });
    const answer = await complete(stack);
    openai.setBehaviour({});
    expect(answer.status).toBe(502);
    expect(answer.text).not.toMatch(/<html|<h1|doctype/i);
    expect(answer.text).not.toContain(CHANNEL_KEY);
    expect(answer.json.error.message).toMatch(/502 with a body that is not JSON/);
  });

  it('does the same in the Gemini format', async ({ stack }) => {
    gemini.failNext(1, 400, `API key not valid: ${gemini.apiKey}. Please pass a valid API key.`);
    const answer = await postJson(`${stack.gateway.url}/v1beta/models/speech:generateContent`, {
      contents: [{ parts: [{ text: 'hello' }] }],
      generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
    }, { 'x-goog-api-key': key });
    expect(answer.status).toBe(400);
    expect(answer.text).not.toContain(gemini.apiKey);
    expect(answer.text).not.toContain(MOCK_GEMINI_API_KEY.slice(0, 0) + 'AIzaSy');
    expect(answer.json.error).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringMatching(/API key not valid: \[redacted\]/) });
  });
});

describe('upstream size limits', () => {
  it('answers 502 for a reply past UPSTREAM_MAX_REPLY_BYTES', async ({ stack }) => {
    openai.setBehaviour({ text: 'word '.repeat(30_000) });
    const answer = await complete(stack);
    openai.setBehaviour({});
    expect(answer.status).toBe(502);
    expect(answer.json.error.message).toMatch(/larger than 65536 bytes/);
    expect((await complete(stack)).status).toBe(200);
  });

  it('answers 502 for a streamed event that never ends, and leaves the upstream call closed', async ({ stack }) => {
    openai.setBehaviour({ endlessEvent: true });
    const started = Date.now();
    const answer = await complete(stack, { stream: true });
    openai.setBehaviour({});
    expect(answer.status).toBe(502);
    expect(answer.json.error.message).toMatch(/event is larger than 65536 bytes/);
    expect(Date.now() - started).toBeLessThan(5000);
    await expect.poll(() => openai.inFlight).toBe(0);
  });
});

describe('upstream usage numbers', () => {
  it('counts a usage past any real request at its bound, and keeps charging the channel and every key after it', async ({ stack }) => {
    // An upstream answered 1e300 tokens: no Redis write could take it, the charge was retried
    // at every flush for good, and every later charge of its channel and key was added to it:
    // the channel's used_quota froze, and the key's requests were free from then on.
    const channelId = (await stack.adminData('GET', '/api/channel/?page_size=100')).items.find((c: { name: string }) => c.name === 'o').id;
    const other = (await stack.admin('POST', '/api/token/', { name: 'other', unlimited_quota: true })).body.data;
    const used = async (path: string) => (await stack.adminData('GET', path)).used_quota as number;
    const channelBefore = await used(`/api/channel/${channelId}`);
    openai.next({ okBody: { id: 'cmpl-huge', object: 'text_completion', created: 1, model: 'text', choices: [{ text: 'x', index: 0, logprobs: null, finish_reason: 'stop' }], usage: { prompt_tokens: 1e300, completion_tokens: 1, total_tokens: 1e300 } } });
    const huge = await complete(stack);
    expect(huge.status).toBe(200);
    expect(huge.json.usage.total_tokens).toBe(2 ** 40);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await postJson(`${stack.gateway.url}/v1/completions`, { model: 'text', prompt: 'hi' }, { authorization: `Bearer ${other.key}` }));
    const tokens = answers.reduce((sum, a) => sum + a.json.usage.total_tokens, 0);
    await expect.poll(() => used(`/api/token/${other.id}`), { timeout: 10_000 }).toBe(tokens);
    // At least: the file's earlier requests may still be charging it.
    await expect.poll(() => used(`/api/channel/${channelId}`), { timeout: 10_000 }).toBeGreaterThanOrEqual(channelBefore + 2 ** 40 + tokens);
  });
});
