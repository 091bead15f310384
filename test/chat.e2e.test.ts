/**
 * Chat completions and embeddings end to end: real Redis, admin-worker, completion-worker and
 * gateway processes, mock OpenAI upstreams over real HTTP, and the clients applications use with
 * nothing changed but the base URL and key: the `openai` SDK, the Vercel AI SDK (`ai` with
 * `@ai-sdk/openai`) and LangChain.js (`@langchain/openai`).
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { embed, embedMany, generateText, jsonSchema, streamText, tool } from 'ai';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { caught, postJson } from '@gateway/testkit';
import { readChatStream, usedQuota, weatherTool } from '@gateway/testkit/chat-client';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 3000 },
})
  .extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }))
  .extend('post', async ({ stack }) => (path: string, body: unknown, key: string) => postJson(`${stack.gateway.url}/v1${path}`, body, { authorization: `Bearer ${key}` }));

let seq = 0;
const uniqueModel = () => `chat-model-${++seq}`;

/** The key's used quota, as the management API shows it. */

describe('chat completions through the openai SDK', () => {
  it('answers whole, in the client\'s model name, with usage charged once to the key', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Hello from the mock' });
    const model = uniqueModel();
    await channel(mock, [`${model}-up`], { model_mapping: { [model]: `${model}-up` } });
    const key = await apiKey();

    const reply = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }], max_completion_tokens: 20, vendor_field: 'kept',
    } as any);
    expect(reply.object).toBe('chat.completion');
    expect(reply.model).toBe(model);
    expect(reply.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Hello from the mock' });
    expect(reply.choices[0]!.finish_reason).toBe('stop');
    expect(reply.usage!.total_tokens).toBeGreaterThan(0);
    // The upstream got the channel's model, the client's fields, and an unknown field unchanged.
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body).toMatchObject({ model: `${model}-up`, max_completion_tokens: 20, vendor_field: 'kept' });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
  });

  it('streams a tool call in pieces, with usage last when include_usage is set', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();

    const stream = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true },
    });
    const { models, toolName, toolArguments, argumentPieces, finish, usage } = await readChatStream(stream);
    expect([...models]).toEqual([model]);
    expect(toolName).toBe('get_weather');
    expect(JSON.parse(toolArguments)).toEqual({ city: 'Paris' });
    expect(argumentPieces).toBeGreaterThan(1);
    expect(finish).toBe('tool_calls');
    expect(usage?.total_tokens).toBeGreaterThan(0);
    // The upstream is always asked for usage, so the stream is charged what it reported.
    expect(mock.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage!.total_tokens);
  });

  it('streams without usage when not asked, and still charges the key what the upstream reported', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'one two three four' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    let text = '';
    let sawUsage = false;
    for await (const chunk of await client(key.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'count' }], stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) sawUsage = true;
    }
    expect(text).toBe('one two three four');
    expect(sawUsage).toBe(false);
    // 1 prompt word + 4 completion words, as the mock counts.
    await expect.poll(() => usedQuota(stack, key.id)).toBe(5);
  });

  it('refuses bad bodies with a 400 in OpenAI\'s shape that names the field', async ({ upstream, channel, apiKey, post }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const cases: [unknown, string][] = [
      [{ model, messages: [] }, 'messages'],
      [{ model, messages: [{ role: 'wizard', content: 'x' }] }, 'messages[0].role'],
      [{ model, messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id'],
      [{ model, messages: [{ role: 'user', content: 'x' }], temperature: 3 }, 'temperature'],
      [{ model, messages: [{ role: 'user', content: 'x' }], top_logprobs: 5 }, 'top_logprobs'],
      [{ model, messages: [{ role: 'user', content: 'x' }], n: 0 }, 'n'],
      [{ model, messages: [{ role: 'user', content: 'x' }], response_format: { type: 'xml' } }, 'response_format.type'],
      [{ model, messages: [{ role: 'user', content: 'x' }], tools: Array.from({ length: 129 }, () => weatherTool) }, 'tools'],
      [{ model, messages: [{ role: 'user', content: 'x' }], stream_options: { include_usage: true } }, 'stream_options'],
    ];
    for (const [body, param] of cases) {
      const reply = await post('/chat/completions', body, key);
      expect(reply.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(reply.json.error.param).toBe(param);
      expect(reply.json.error.type).toBe('invalid_request_error');
    }
    expect(mock.requests).toHaveLength(0);
  });

  it('fails over from a failing channel to another for the same model', async ({ upstream, channel, apiKey, client }) => {
    const failing = await upstream.openai({ status: 500 });
    const working = await upstream.openai({ text: 'from the second' });
    const model = uniqueModel();
    await channel(failing, [model], { priority: 10 });
    await channel(working, [model], { priority: 0 });
    const { key } = await apiKey();
    const reply = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    expect(reply.choices[0]!.message.content).toBe('from the second');
    expect(failing.requests.length).toBeGreaterThan(0);
  });
});

describe('embeddings through the openai SDK', () => {
  it('embeds strings as floats and as base64 (the SDK\'s default), charged by the upstream\'s usage', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const floats = await client(key.key).embeddings.create({ model, input: ['first text', 'second'], encoding_format: 'float' });
    expect(floats.data).toHaveLength(2);
    expect(floats.data[1]!.index).toBe(1);
    expect(floats.data[0]!.embedding).toHaveLength(8);
    // The SDK asks for base64 by default and decodes it: the same vector comes out.
    const decoded = await client(key.key).embeddings.create({ model, input: 'first text', dimensions: 8 });
    expect(mock.requests.at(-1)!.body.encoding_format).toBe('base64');
    decoded.data[0]!.embedding.forEach((value, i) => expect(value).toBeCloseTo(floats.data[0]!.embedding[i]!, 5));
    expect(floats.model).toBe(model);
    // 3 words, then 2: what the mock reported.
    await expect.poll(() => usedQuota(stack, key.id)).toBe(5);
  });

  it('refuses what OpenAI refuses, naming the field, and a stream', async ({ apiKey, post }) => {
    const { key } = await apiKey();
    const model = uniqueModel();
    for (const [body, param] of [
      [{ model, input: '' }, 'input'],
      [{ model, input: [] }, 'input'],
      [{ model, input: Array.from({ length: 2049 }, () => 'x') }, 'input'],
      [{ model, input: 'x', encoding_format: 'int8' }, 'encoding_format'],
      [{ model, input: 'x', dimensions: 0 }, 'dimensions'],
      [{ model, input: 'x', stream: true }, 'stream'],
    ] as [unknown, string][]) {
      const reply = await post('/embeddings', body, key);
      expect(reply.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(reply.json.error.param).toBe(param);
    }
  });
});

describe('embeddings from a gemini channel (batchEmbedContents)', () => {
  it('translates the request and the vectors, base64 included, and estimates the usage Gemini does not report', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [`${model}-up`], { model_mapping: { [model]: `${model}-up` } });
    const key = await apiKey();
    const floats = await client(key.key).embeddings.create({ model, input: ['sixteen characters', 'eight ch'], encoding_format: 'float', dimensions: 4 });
    expect(floats.data.map((d) => d.embedding.length)).toEqual([4, 4]);
    expect(floats.model).toBe(model);
    const sent = mock.received.at(-1)!;
    expect(sent.method).toBe('batchEmbedContents');
    expect(sent.body).toEqual({ requests: [
      { model: `models/${model}-up`, content: { parts: [{ text: 'sixteen characters' }] }, outputDimensionality: 4 },
      { model: `models/${model}-up`, content: { parts: [{ text: 'eight ch' }] }, outputDimensionality: 4 },
    ] });
    // The SDK's default base64 decodes to the same floats.
    const decoded = await client(key.key).embeddings.create({ model, input: 'sixteen characters', dimensions: 4 });
    decoded.data[0]!.embedding.forEach((value, i) => expect(value).toBeCloseTo(floats.data[0]!.embedding[i]!, 5));
    // Four characters a token: 18 → 5 and 8 → 2, then 5 again.
    expect(floats.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(12);
  });

  it('refuses token ids, which Gemini cannot embed, with a 400', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const error = await caught(client(key).embeddings.create({ model, input: [1, 2, 3] }));
    expect(error).toMatchObject({ status: 400 });
    expect(mock.received).toHaveLength(0);
  });

  it('fails over across types: a failing gemini channel to an openai one for the same model', async ({ upstream, channel, apiKey, client }) => {
    const gemini = await upstream.gemini();
    gemini.failNext(5, 500);
    const openai = await upstream.openai();
    const model = uniqueModel();
    await channel(gemini, [model], { priority: 10 });
    await channel(openai, [model], { priority: 0 });
    const { key } = await apiKey();
    const reply = await client(key).embeddings.create({ model, input: 'x', encoding_format: 'float' });
    expect(reply.data[0]!.embedding).toHaveLength(8);
    expect(gemini.received.length).toBeGreaterThan(0);
    expect(openai.requests).toHaveLength(1);
  });
});

describe('the Vercel AI SDK', () => {
  it('generateText, streamText with a tool call, embed and embedMany', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'Vercel says hi' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });

    // Its default model is the Responses API; `.chat` is the chat completions one.
    const generated = await generateText({ model: provider.chat(model), prompt: 'Say hi', maxRetries: 0 });
    expect(generated.text).toBe('Vercel says hi');
    expect(generated.usage.totalTokens).toBeGreaterThan(0);

    const streamed = streamText({
      model: provider.chat(model),
      prompt: 'What is the weather in Paris?',
      tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }) }) },
      maxRetries: 0,
    });
    const calls = await streamed.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' } });
    expect(await streamed.finishReason).toBe('tool-calls');

    const one = await embed({ model: provider.embedding(model), value: 'sunny day', maxRetries: 0 });
    expect(one.embedding).toHaveLength(8);
    const many = await embedMany({ model: provider.embedding(model), values: ['a', 'b', 'c'], maxRetries: 0 });
    expect(many.embeddings).toHaveLength(3);
    expect(many.embeddings[0]).not.toEqual(many.embeddings[1]);
  });
});

describe('LangChain.js', () => {
  it('ChatOpenAI invoke and stream, OpenAIEmbeddings', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'LangChain says hi' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const configuration = { baseURL: `${stack.gateway.url}/v1` };
    const chat = new ChatOpenAI({ model, apiKey: key, configuration, maxRetries: 0 });
    const message = await chat.invoke('Say hi');
    expect(message.content).toBe('LangChain says hi');
    let streamed = '';
    for await (const chunk of await chat.stream('Say hi')) streamed += chunk.content;
    expect(streamed).toBe('LangChain says hi');

    const embeddings = new OpenAIEmbeddings({ model, apiKey: key, configuration, maxRetries: 0 });
    const vectors = await embeddings.embedDocuments(['one', 'two']);
    expect(vectors).toHaveLength(2);
    expect(vectors[0]).toHaveLength(8);
    expect(await embeddings.embedQuery('one')).toEqual(vectors[0]);
  });
});

describe('errors', () => {
  it('an unknown model is a 404 in OpenAI\'s shape on every new route', async ({ apiKey, client }) => {
    const { key } = await apiKey();
    const chatError = await caught(client(key).chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }));
    expect(chatError).toMatchObject({ status: 404 });
    const embedError = await caught(client(key).embeddings.create({ model: 'no-such-model', input: 'x' }));
    expect(embedError).toMatchObject({ status: 404 });
  });
});
