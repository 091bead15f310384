/**
 * AWS Bedrock channels end to end: real Redis, admin-worker, completion-worker and gateway
 * processes, a mock Bedrock runtime over real HTTP that verifies every request's Signature V4 as
 * AWS does and streams in AWS's event stream, channels made through the management API with a
 * JSON credential, and the `openai` SDK as the client with nothing changed but the base URL and key.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { ChannelStatus } from '@gateway/contracts';
import { bedrockCredentialOf, MOCK_AWS_KEY } from '@gateway/testkit';
import { readChatStream, usedQuota, weatherTool } from '@gateway/testkit/chat-client';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker'],
  env: {
    REQUEST_TIMEOUT_MS: '15000',
    CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: '2',
    // The workers' own AWS credentials, for a channel that says "credentials": "environment".
    AWS_ACCESS_KEY_ID: MOCK_AWS_KEY.accessKeyId,
    AWS_SECRET_ACCESS_KEY: MOCK_AWS_KEY.secretAccessKey,
  },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }));

const CLAUDE = 'anthropic.claude-3-5-sonnet-20240620-v1:0';
let seq = 0;
const uniqueModel = () => `bedrock-model-${++seq}`;

describe('a bedrock channel through the openai SDK', () => {
  it('answers chat whole through Converse, signed, and never shows the secret', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.bedrock({ models: [CLAUDE] });
    const model = uniqueModel();
    const made = await channel(mock, [CLAUDE], { model_mapping: { [model]: CLAUDE } });
    const key = await apiKey();

    const reply = await client(key.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.model).toBe(model);
    expect(reply.choices[0]!.message.content).toBe('Hello from Bedrock');
    expect(mock.requests.at(-1)).toMatchObject({ modelId: CLAUDE, action: 'converse', accessKeyId: mock.key.accessKeyId });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
    const shown = JSON.stringify((await stack.admin('GET', `/api/channel/${made.id}`)).body);
    expect(shown).not.toContain(mock.key.secretAccessKey);
  });

  it("streams a tool call from ConverseStream's event stream, with usage last", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.bedrock();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();

    const stream = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true },
    });
    const { toolName, toolArguments, finish, usage } = await readChatStream(stream);
    expect([toolName, JSON.parse(toolArguments), finish]).toEqual(['get_weather', { city: 'Paris' }, 'tool_calls']);
    expect(mock.requests.at(-1)).toMatchObject({ action: 'converse-stream' });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage!.total_tokens);
  });

  it('embeds through InvokeModel with a Titan model', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.bedrock();
    const model = uniqueModel();
    await channel(mock, ['amazon.titan-embed-text-v2:0'], { model_mapping: { [model]: 'amazon.titan-embed-text-v2:0' } });
    const { key } = await apiKey();
    const embedded = await client(key).embeddings.create({ model, input: 'first text', encoding_format: 'float' });
    expect(embedded.data[0]!.embedding).toHaveLength(8);
    expect(embedded.usage.prompt_tokens).toBeGreaterThan(0);
    expect(mock.requests.at(-1)).toMatchObject({ modelId: 'amazon.titan-embed-text-v2:0', action: 'invoke', body: { inputText: 'first text' } });
  });

  it("signs with the completion worker's own AWS credentials where the channel names only its region", async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.bedrock({ models: [CLAUDE] });
    const model = uniqueModel();
    await channel(mock, [CLAUDE], { model_mapping: { [model]: CLAUDE }, key: JSON.stringify({ region: mock.region, credentials: 'environment' }) });
    const { key } = await apiKey();

    const reply = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.choices[0]!.message.content).toBe('Hello from Bedrock');
    expect(mock.requests.at(-1)).toMatchObject({ modelId: CLAUDE, action: 'converse', accessKeyId: MOCK_AWS_KEY.accessKeyId });
  });

  it('auto-disables a bedrock channel whose signatures AWS refuses twice, its requests served by another channel', async ({ stack, upstream, channel, apiKey, client }) => {
    const [refusing, steady] = [await upstream.bedrock(), await upstream.bedrock()];
    const model = uniqueModel();
    const wrongSecret = bedrockCredentialOf({ ...refusing.key, secretAccessKey: 'not-the-secret-access-key-0123456789' }, refusing.region);
    const bad = await channel(refusing, [model], { key: wrongSecret, priority: 10 });
    await channel(steady, [model]);
    const openai = client((await apiKey()).key);

    for (let i = 0; i < 2; i++) await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(ChannelStatus.autoDisabled);
    expect(stored.status_reason).toMatch(/401/);
    expect([refusing.requests.length, steady.requests.length]).toEqual([2, 2]);
  });
});
