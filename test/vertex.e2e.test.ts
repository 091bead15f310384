/**
 * Google Vertex AI channels end to end: real Redis, admin-worker, completion-worker, audio-worker
 * and gateway processes, a mock Vertex AI over real HTTP with Google's token endpoint beside it
 * (each service account's JWT verified against its public key, short-lived access tokens,
 * expired and revoked ones refused as Vertex does), channels made through the management API
 * with a service account's JSON key, and the `openai` and `@anthropic-ai/sdk` SDKs as clients
 * with nothing changed but the base URL and key.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { ChannelStatus, messagesRequestTokens } from '@gateway/contracts';
import { readChatStream, usedQuota, weatherTool } from '@gateway/testkit/chat-client';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000', CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: '2' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }));

const GEMINI = 'gemini-2.5-flash';
const CLAUDE = 'claude-sonnet-4@20250514';
let seq = 0;
const uniqueModel = () => `vertex-model-${++seq}`;

describe('a vertex channel through the SDKs', () => {
  it("answers chat whole from a Gemini model in the key's project and region, and never shows the service account's key", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.vertex({}, { text: 'Hello from Vertex' });
    const model = uniqueModel();
    const made = await channel(mock, [GEMINI], { model_mapping: { [model]: GEMINI } });
    const key = await apiKey();

    const reply = await client(key.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.model).toBe(model);
    expect(reply.choices[0]!.message.content).toBe('Hello from Vertex');
    expect(mock.requests.at(-1)).toMatchObject({ project: mock.project, region: mock.region, publisher: 'google', model: GEMINI, action: 'generateContent', token: mock.oauth.issued[0]!.token });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
    const shown = JSON.stringify([(await stack.admin('GET', `/api/channel/${made.id}`)).body, (await stack.admin('GET', '/api/channel/?p=0&page_size=100')).body]);
    const privateKeyBody = mock.account.privateKeyPem.split('\n')[1]!;
    for (const secret of [privateKeyBody, mock.account.privateKeyId, mock.oauth.issued[0]!.token]) expect(shown).not.toContain(secret);
  });

  it('streams a tool call from a Gemini model, with usage last', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.vertex();
    const model = uniqueModel();
    await channel(mock, [GEMINI], { model_mapping: { [model]: GEMINI } });
    const key = await apiKey();

    const stream = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true },
    });
    const { toolName, toolArguments, usage } = await readChatStream(stream);
    expect([toolName, JSON.parse(toolArguments)]).toEqual(['get_weather', { city: 'mock' }]);
    expect(mock.requests.at(-1)).toMatchObject({ action: 'streamGenerateContent', path: expect.stringContaining('alt=sse') });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage!.total_tokens);
  });

  it("serves a Claude model through rawPredict to the openai SDK and through streamRawPredict to Anthropic's SDK", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.vertex({}, { text: 'Hello from Claude on Vertex' });
    const model = uniqueModel();
    await channel(mock, [CLAUDE], { model_mapping: { [model]: CLAUDE } });
    const { key } = await apiKey();

    const reply = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.choices[0]!.message.content).toBe('Hello from Claude on Vertex');
    expect(mock.requests.at(-1)).toMatchObject({ publisher: 'anthropic', model: CLAUDE, action: 'rawPredict', body: { anthropic_version: 'vertex-2023-10-16' } });

    const anthropic = new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0 });
    let text = '';
    const events = anthropic.messages.stream({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Say hello' }] });
    for await (const event of events) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    expect(text).toBe('Hello from Claude on Vertex');
    expect((await events.finalMessage()).model).toBe(model);
    expect(mock.requests.at(-1)).toMatchObject({ action: 'streamRawPredict', body: { stream: true } });
    expect(mock.requests.at(-1)!.body).not.toHaveProperty('model');
  });

  it("counts a Claude model's tokens at Vertex's count-tokens endpoint for Anthropic's SDK, and estimates a Gemini model's", async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.vertex();
    const [claude, gemini] = [uniqueModel(), uniqueModel()];
    await channel(mock, [CLAUDE, GEMINI], { model_mapping: { [claude]: CLAUDE, [gemini]: GEMINI } });
    const { key } = await apiKey();
    const anthropic = new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0 });
    const asked = { system: 'Be brief.', messages: [{ role: 'user' as const, content: 'How many tokens is this?' }] };

    const counted = await anthropic.messages.countTokens({ model: claude, ...asked });
    // Vertex's count (the mock's: a quarter of the text), not the gateway's estimate of the whole body.
    expect(counted.input_tokens).toBe(Math.ceil('Be brief.How many tokens is this?'.length / 4));
    expect(counted.input_tokens).not.toBe(messagesRequestTokens({ model: claude, ...asked }));
    expect(mock.requests.at(-1)).toMatchObject({
      publisher: 'anthropic', model: 'count-tokens', action: 'rawPredict', token: mock.oauth.issued.at(-1)!.token,
      body: { model: CLAUDE, anthropic_version: 'vertex-2023-10-16', system: 'Be brief.' },
    });

    const asks = mock.requests.length;
    const estimated = await anthropic.messages.countTokens({ model: gemini, ...asked });
    expect(estimated.input_tokens).toBe(messagesRequestTokens({ model: gemini, ...asked }));
    expect(mock.requests).toHaveLength(asks);
  });

  it("embeds through :predict for OpenAI's SDK and Google's, and speaks through the audio worker", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.vertex();
    const [embedder, speaker] = [uniqueModel(), uniqueModel()];
    await channel(mock, ['text-embedding-005', 'gemini-2.5-flash-preview-tts'], { model_mapping: { [embedder]: 'text-embedding-005', [speaker]: 'gemini-2.5-flash-preview-tts' } });
    const { key } = await apiKey();

    const embedded = await client(key).embeddings.create({ model: embedder, input: ['first text', 'second'], encoding_format: 'float' });
    expect(embedded.data.map((d) => d.embedding.length)).toEqual([8, 8]);
    expect(embedded.usage.prompt_tokens).toBe(Math.ceil('first text'.length / 4) + Math.ceil('second'.length / 4));
    const google = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } });
    const fromGoogle = await google.models.embedContent({ model: embedder, contents: ['hello there', 'world'], config: { outputDimensionality: 4, taskType: 'RETRIEVAL_DOCUMENT' } });
    expect(fromGoogle.embeddings!.map((e) => e.values!.length)).toEqual([4, 4]);
    expect(mock.requests.at(-1)!.body).toEqual({ instances: [{ content: 'hello there', task_type: 'RETRIEVAL_DOCUMENT' }, { content: 'world', task_type: 'RETRIEVAL_DOCUMENT' }], parameters: { outputDimensionality: 4 } });

    const speech = await client(key).audio.speech.create({ model: speaker, input: 'Hello from Vertex', voice: 'alloy', response_format: 'wav' });
    expect(speech.headers.get('content-type')).toBe('audio/wav');
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(mock.requests.map((r) => [r.model, r.action])).toEqual([['text-embedding-005', 'predict'], ['text-embedding-005', 'predict'], ['gemini-2.5-flash-preview-tts', 'streamGenerateContent']]);
  });

  it('refreshes a token before it expires: Vertex never sees an expired one', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.vertex({ tokenLifetimeSeconds: 2 });
    const model = uniqueModel();
    await channel(mock, [GEMINI], { model_mapping: { [model]: GEMINI } });
    const openai = client((await apiKey()).key);

    // Requests go on while the first token ages past half its life, until a second is issued.
    await expect.poll(async () => {
      await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
      return mock.oauth.issued.length;
    }, { timeout: 10_000, interval: 200 }).toBe(2);
    const expiryOf = (token: string | undefined) => mock.oauth.issued.find((issued) => issued.token === token)?.expiresAt ?? 0;
    expect(mock.requests.every((r) => expiryOf(r.token) > r.at)).toBe(true);
  });

  it('auto-disables a vertex channel whose service account is revoked, its requests served by another channel', async ({ stack, upstream, channel, apiKey, client }) => {
    const [revoked, steady] = [await upstream.vertex(), await upstream.vertex()];
    const model = uniqueModel();
    const bad = await channel(revoked, [GEMINI], { model_mapping: { [model]: GEMINI }, priority: 10 });
    await channel(steady, [GEMINI], { model_mapping: { [model]: GEMINI } });
    const openai = client((await apiKey()).key);
    await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    // Its answer is charged (which counts as the channel working, and resets its failures) before it is revoked.
    await expect.poll(async () => (await stack.adminData('GET', `/api/channel/${bad.id}`)).used_quota).toBeGreaterThan(0);

    revoked.oauth.revoke(revoked.account.clientEmail);
    // The held token is refused (401 UNAUTHENTICATED), then the new token request (invalid_grant).
    for (let i = 0; i < 2; i++) await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(ChannelStatus.autoDisabled);
    expect(stored.status_reason).toMatch(/401/);
    await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    expect([revoked.requests.length, steady.requests.length]).toEqual([2, 3]);
    expect(revoked.oauth.issued).toHaveLength(1);
    // Neither the key nor a token is in any process's log, nor in the reason the channel shows.
    const written = [...[stack.gateway, ...stack.services].flatMap((service) => service.output), JSON.stringify(stored)].join('\n');
    for (const secret of [revoked.account.privateKeyPem.split('\n')[1]!, revoked.account.privateKeyId, revoked.oauth.issued[0]!.token]) expect(written).not.toContain(secret);
  });
});
