/**
 * Azure OpenAI channels end to end: real Redis, admin-worker, completion-worker, audio-worker
 * and gateway processes, a mock Azure OpenAI resource over real HTTP that checks deployment,
 * api-version and key as Azure does, channels made through the management API, and the `openai`
 * SDK as the client with nothing changed but the base URL and key.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { ChannelStatus } from '@gateway/contracts';
import { readChatStream, usedQuota, weatherTool } from '@gateway/testkit/chat-client';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000', CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: '2' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }));

let seq = 0;
const uniqueModel = () => `azure-model-${++seq}`;

describe('an azure channel through the openai SDK', () => {
  it("answers chat whole from the deployment its model maps to, with the resource's key and API version, and never shows the key", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ deployments: ['gpt-4o-prod'] }, { text: 'Hello from Azure' });
    const model = uniqueModel();
    const credential = JSON.stringify({ api_key: mock.apiKey, api_version: '2025-04-01-preview' });
    const made = await channel(mock, ['gpt-4o-prod'], { model_mapping: { [model]: 'gpt-4o-prod' }, key: credential });
    const key = await apiKey();

    const reply = await client(key.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.model).toBe(model);
    expect(reply.choices[0]!.message.content).toBe('Hello from Azure');
    expect(mock.requests.at(-1)).toMatchObject({ deployment: 'gpt-4o-prod', operation: 'chat/completions', apiVersion: '2025-04-01-preview', apiKey: mock.apiKey });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
    // The management API shows a mask of the structured credential, never the key inside it.
    const shown = JSON.stringify((await stack.admin('GET', `/api/channel/${made.id}`)).body);
    expect(shown).not.toContain(mock.apiKey);
  });

  it('streams a tool call, with usage last', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();

    const stream = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true },
    });
    const { toolName, toolArguments, finish, usage } = await readChatStream(stream);
    expect([toolName, JSON.parse(toolArguments), finish]).toEqual(['get_weather', { city: 'Paris' }, 'tool_calls']);
    expect(mock.requests.at(-1)).toMatchObject({ deployment: model, body: { stream: true } });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage!.total_tokens);
  });

  it('embeds, and speaks through the audio worker', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ deployments: ['embed-prod', 'tts-prod'] });
    const [embedder, speaker] = [uniqueModel(), uniqueModel()];
    await channel(mock, ['embed-prod', 'tts-prod'], { model_mapping: { [embedder]: 'embed-prod', [speaker]: 'tts-prod' } });
    const { key } = await apiKey();

    const embedded = await client(key).embeddings.create({ model: embedder, input: ['first text', 'second'], encoding_format: 'float' });
    expect(embedded.data).toHaveLength(2);
    expect(embedded.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(embedded.model).toBe(embedder);

    const speech = await client(key).audio.speech.create({ model: speaker, input: 'Hello from Azure', voice: 'alloy', response_format: 'mp3' });
    expect(speech.headers.get('content-type')).toBe('audio/mpeg');
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(100);
    expect(mock.requests.map((r) => [r.deployment, r.operation])).toEqual([['embed-prod', 'embeddings'], ['tts-prod', 'audio/speech']]);
  });

  it('auto-disables an azure channel whose resource refuses its key twice in a row, the requests served by another channel', async ({ stack, upstream, channel, apiKey, client }) => {
    const [refusing, steady] = [await upstream.azure(), await upstream.azure()];
    const model = uniqueModel();
    const bad = await channel(refusing, [model], { key: 'not-the-resource-key', priority: 10 });
    await channel(steady, [model]);
    const openai = client((await apiKey()).key);

    for (let i = 0; i < 2; i++) await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(ChannelStatus.autoDisabled);
    expect(stored.status_reason).toMatch(/401/);
    await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    expect([refusing.requests.length, steady.requests.length]).toEqual([2, 3]);
  });
});
