/**
 * A `bedrock` channel against a mock Bedrock runtime that verifies Signature V4 as AWS does:
 * chat through Converse whole and ConverseStream (AWS's event stream), a tool call, embeddings
 * through InvokeModel for Titan and Cohere; a wrong secret, a foreign key, another region and an
 * expired signature refused, and read as the channel's 401.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UpstreamError, type ChatChunk, type ChatRequest, type EmbeddingRequest } from '@gateway/contracts';
import { bedrockCredentialOf, MOCK_AWS_KEY, startMockBedrockUpstream, type MockBedrockUpstream } from '@gateway/testkit';
import { callUpstream, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { bedrock } from './index.ts';

const CLAUDE = 'anthropic.claude-3-5-sonnet-20240620-v1:0';

let mock: MockBedrockUpstream;
let target: UpstreamTarget;

beforeAll(async () => {
  mock = await startMockBedrockUpstream({ models: [CLAUDE, 'amazon.titan-embed-text-v2:0', 'cohere.embed-english-v3'] });
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  target = { channel: { base_url: mock.url }, key: bedrockCredentialOf(mock.key, mock.region), upstreamModel: CLAUDE, timeoutMs: 2000 };
});

const chat = (fields: Partial<ChatRequest> = {}) => ({ model: 'claude', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }], ...fields }) as ChatRequest;
const failureOf = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('expected a failure'), (error: unknown) => error as UpstreamError);
const weatherTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } } as const;

describe('a bedrock channel', () => {
  it('chats through Converse, signed, with the system prompt, the model in the path and usage', async () => {
    const reply = await callUpstream(bedrock.chat, target, chat({ max_tokens: 50, temperature: 0.2 }));
    expect(reply).toMatchObject({ object: 'chat.completion', model: 'claude', choices: [{ message: { role: 'assistant', content: 'Hello from Bedrock' }, finish_reason: 'stop' }] });
    expect(reply.usage!.completion_tokens).toBe(3);
    expect(mock.requests[0]).toMatchObject({
      modelId: CLAUDE, action: 'converse', accessKeyId: MOCK_AWS_KEY.accessKeyId,
      body: { system: [{ text: 'Be brief.' }], messages: [{ role: 'user', content: [{ text: 'Say hello' }] }], inferenceConfig: { maxTokens: 50, temperature: 0.2 } },
    });
  });

  it("streams through ConverseStream, decoding AWS's event stream, a tool call included", async () => {
    const text: ChatChunk[] = [];
    for await (const chunk of await streamUpstream(bedrock.chat, target, chat({ stream: true, stream_options: { include_usage: true } }))) text.push(chunk);
    expect(text.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Hello from Bedrock');
    expect(text.at(-1)!.usage?.completion_tokens).toBe(3);

    let args = '';
    let finish: string | null = null;
    const asked = chat({ stream: true, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool] } as Partial<ChatRequest>);
    for await (const chunk of await streamUpstream(bedrock.chat, target, asked)) {
      for (const choice of chunk.choices) {
        for (const call of choice.delta.tool_calls ?? []) args += call.function?.arguments ?? '';
        finish = choice.finish_reason ?? finish;
      }
    }
    expect([JSON.parse(args), finish]).toEqual([{ city: 'Paris' }, 'tool_calls']);
    expect(mock.requests[1]).toMatchObject({ action: 'converse-stream', body: { toolConfig: { tools: [{ toolSpec: { name: 'get_weather', inputSchema: { json: weatherTool.function.parameters } } }] } } });
  });

  it("embeds through InvokeModel in Titan's and Cohere's bodies", async () => {
    const titan = await callUpstream(bedrock.embeddings, { ...target, upstreamModel: 'amazon.titan-embed-text-v2:0' }, { model: 'e', input: 'hello', dimensions: 8 } as EmbeddingRequest);
    expect(titan).toMatchObject({ object: 'list', model: 'e', data: [{ index: 0 }], usage: { prompt_tokens: 2 } });
    const cohere = await callUpstream(bedrock.embeddings, { ...target, upstreamModel: 'cohere.embed-english-v3' }, { model: 'e', input: ['one', 'two'] } as EmbeddingRequest);
    expect(cohere.data.map((d) => d.index)).toEqual([0, 1]);
    expect(mock.requests.map((r) => r.body)).toEqual([{ inputText: 'hello', dimensions: 8 }, { texts: ['one', 'two'], input_type: 'search_document' }]);
  });

  it('is refused as AWS refuses a bad signature, and reads it as the channel\'s 401', async () => {
    const signedWith = (key: object, region = mock.region) => ({ ...target, key: bedrockCredentialOf({ ...mock.key, ...key }, region) });
    const wrongSecret = await failureOf(callUpstream(bedrock.chat, signedWith({ secretAccessKey: 'not-the-secret' }), chat()));
    expect(wrongSecret).toMatchObject({ kind: 'http', status: 401, message: expect.stringContaining('signature we calculated does not match') });
    expect(await failureOf(callUpstream(bedrock.chat, signedWith({ accessKeyId: 'AKIAUNKNOWN000000000' }), chat()))).toMatchObject({ status: 401, message: expect.stringContaining('security token included in the request is invalid') });
    expect(await failureOf(callUpstream(bedrock.chat, signedWith({}, 'eu-west-1'), chat()))).toMatchObject({ status: 401 });
    const later = await startMockBedrockUpstream({ clockAheadMs: 10 * 60_000 });
    try {
      expect(await failureOf(callUpstream(bedrock.chat, { ...target, channel: { base_url: later.url } }, chat()))).toMatchObject({ status: 401, message: expect.stringContaining('Signature expired') });
    } finally {
      await later.close();
    }
    expect(await failureOf(callUpstream(bedrock.chat, { ...target, key: '{"access_key_id":"AKIA"}' }, chat()))).toMatchObject({ status: 401, message: expect.stringContaining("read as the bedrock provider's credential") });
  });

  it("signs with the worker's own AWS credentials where the channel says \"credentials\": \"environment\"", async () => {
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = MOCK_AWS_KEY.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = MOCK_AWS_KEY.secretAccessKey;
    try {
      const fromEnvironment = { ...target, key: JSON.stringify({ region: mock.region, credentials: 'environment' }) };
      const reply = await callUpstream(bedrock.chat, fromEnvironment, chat());
      expect(reply.choices[0]!.message.content).toBe('Hello from Bedrock');
      expect(mock.requests[0]).toMatchObject({ action: 'converse', accessKeyId: MOCK_AWS_KEY.accessKeyId });
      const both = await failureOf(callUpstream(bedrock.chat, { ...target, key: JSON.stringify({ region: mock.region, credentials: 'environment', access_key_id: 'AKIA0' }) }, chat()));
      expect([both.status, both.message]).toEqual([401, expect.stringContaining('it takes one')]);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = saved.id;
      process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
      if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
      if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    }
  });

  it('reads throttling as a 429 that waits, and an unknown model as the request\'s 400', async () => {
    mock.next({ status: 429, retryAfter: 3 });
    expect(await failureOf(callUpstream(bedrock.chat, target, chat()))).toMatchObject({ kind: 'http', status: 429, retryAfter: 3, message: expect.stringContaining('Too many requests') });
    expect(await failureOf(callUpstream(bedrock.chat, { ...target, upstreamModel: 'anthropic.nowhere-v1:0' }, chat()))).toMatchObject({ status: 400, message: expect.stringContaining('model identifier is invalid') });
  });
});
