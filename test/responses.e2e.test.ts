/**
 * OpenAI's Responses door end to end: real Redis, PostgreSQL, completion-worker and gateway
 * processes, the test kit's mock upstreams over real HTTP, and the clients that call
 * `/v1/responses` today (the `openai` SDK's `responses`, and the Vercel AI SDK's default
 * `openai('…')` model), with nothing changed but the base URL and key. On an openai channel the
 * request goes through the conversation model to chat completions; on an anthropic channel to
 * Messages.
 */
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, streamText, tool } from 'ai';
import { caught, postJson } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker', 'batch-worker'],
  // What a user keeps: the cap test fills it with one large stored response.
  env: { REQUEST_TIMEOUT_MS: '15000', FILE_USER_MAX_BYTES: '200000' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }));

let seq = 0;
const uniqueModel = () => `responses-model-${++seq}`;

const weatherTool = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The current weather in a place',
  parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'], additionalProperties: false },
  strict: true,
};

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

/** A raw stream's events: their names, and each data's JSON. */
async function rawEvents(response: Response): Promise<{ name: string; data: Record<string, any> }[]> {
  const text = await response.text();
  return text.trim().split('\n\n').map((block) => {
    const [event, data] = block.split('\n');
    return { name: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) as Record<string, any> };
  });
}

describe('the Responses door on an openai channel', () => {
  it('answers responses.create whole, through chat completions, with usage in its fields, logged and charged', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Hello from GPT', usageFields: { prompt_tokens_details: { cached_tokens: 2 } } });
    const model = uniqueModel();
    await channel(mock, ['gpt-upstream'], { model_mapping: { [model]: 'gpt-upstream' } });
    const key = await apiKey();
    const { data: response, response: http } = await client(key.key).responses.create({
      model, instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 64, temperature: 0.5, metadata: { topic: 'greeting' }, store: false,
    }).withResponse();
    expect(response).toMatchObject({ object: 'response', status: 'completed', model, instructions: 'Be brief.', metadata: { topic: 'greeting' } });
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toBe('Hello from GPT');
    expect(response.output).toEqual([{ id: expect.stringMatching(/^msg_/), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello from GPT', annotations: [], logprobs: [] }] }]);
    expect(response.usage).toMatchObject({ input_tokens_details: { cached_tokens: 2 }, output_tokens_details: { reasoning_tokens: 0 } });
    const usage = response.usage!;
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(mock.requests.at(-1)!).toMatchObject({ path: '/v1/chat/completions' });
    expect(mock.requests.at(-1)!.body).toEqual({
      model: 'gpt-upstream', stream: false, max_tokens: 64, temperature: 0.5,
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }],
    });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage.total_tokens);
    const row = await loggedRow(stack, http.headers.get('x-request-id')!);
    expect(row).toMatchObject({ route: '/v1/responses', model, status: 200, prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens });
  });

  it('streams the exact event sequence, numbered, and responses.stream gives the final response', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'one two three' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const raw = await fetch(`${stack.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, input: 'count', stream: true, store: false }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await rawEvents(raw);
    expect(events.map((e) => e.name)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.delta', 'response.output_text.delta',
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.map((e) => e.data.type)).toEqual(events.map((e) => e.name));
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, at) => at));
    expect(events[0]!.data.response).toMatchObject({ status: 'in_progress', output: [], usage: null });
    expect(events.at(-1)!.data.response).toMatchObject({ id: events[0]!.data.response.id, status: 'completed', usage: { output_tokens: 3 } });

    const stream = client(key).responses.stream({ model, input: 'count', store: false });
    let streamed = '';
    stream.on('response.output_text.delta', (event) => { streamed += event.delta; });
    const final = await stream.finalResponse();
    expect(streamed).toBe('one two three');
    expect(final.output_text).toBe('one two three');
    expect(final.usage!.output_tokens).toBe(3);
    expect(mock.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('runs a function call turn: the call streamed with its arguments, its function_call_output sent back', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ toolCall: { name: 'get_weather', arguments: '{"location":"Paris"}' } });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const ask = { role: 'user' as const, content: 'Weather in Paris?' };
    const stream = client(key).responses.stream({ model, input: [ask], tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false, store: false });
    const deltas: string[] = [];
    stream.on('response.function_call_arguments.delta', (event) => { deltas.push(event.delta); });
    const first = await stream.finalResponse();
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'get_weather', arguments: '{"location":"Paris"}', call_id: expect.any(String) });
    expect(deltas.join('')).toBe('{"location":"Paris"}');
    const sent = mock.requests.at(-1)!.body;
    expect(sent).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false, tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherTool.parameters } }] });

    mock.setBehaviour({ text: 'It is sunny.' });
    const answer = await client(key).responses.create({
      model, tools: [weatherTool], store: false,
      input: [ask, { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments }, { type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 °C' }],
    });
    expect(answer.output_text).toBe('It is sunny.');
    expect(mock.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }] },
      { role: 'tool', tool_call_id: call.call_id, content: 'Sunny, 21 °C' },
    ]);
  });

  it('asks for a JSON schema as chat\'s response_format, and passes images and reasoning effort', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: '{"city":"Paris"}' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const response = await client(key).responses.create({
      model, store: false, reasoning: { effort: 'low' },
      text: { format: { type: 'json_schema', name: 'place', schema, strict: true } },
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Where is this?' }, { type: 'input_image', image_url: 'data:image/png;base64,iVBOR', detail: 'auto' }] }],
    });
    expect(JSON.parse(response.output_text)).toEqual({ city: 'Paris' });
    expect(response.text).toMatchObject({ format: { type: 'json_schema', name: 'place' } });
    expect(mock.requests.at(-1)!.body).toMatchObject({
      reasoning_effort: 'low',
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema } },
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Where is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] }],
    });
  });

  it('refuses an invalid body in OpenAI\'s error shape, before any upstream call, and leaves hosted tools out', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const invalid = await postJson(`${stack.gateway.url}/v1/responses`, { model, input: 42 }, { authorization: `Bearer ${key}` });
    expect(invalid.status).toBe(400);
    expect(invalid.json).toEqual({ error: { type: 'invalid_request_error', code: expect.anything(), param: 'input', message: expect.stringMatching(/input/) } });
    expect(mock.requests).toHaveLength(0);
    // A hosted tool only OpenAI runs is left out (the model answers without it), a namespace's tools offered one by one.
    const hosted = await client(key).responses.create({
      model, input: 'hi', store: false,
      tools: [{ type: 'web_search_preview' }, { type: 'namespace', name: 'agents', description: 'Sub-agents', tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } }] } as never],
    });
    expect(hosted.status).toBe('completed');
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests.at(-1)!.body.tools).toEqual([{ type: 'function', function: { name: 'spawn_agent', parameters: { type: 'object', properties: {} } } }]);
    const unauthorized = await caught(client('sk-not-a-key').responses.create({ model, input: 'hi' }));
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('fails before the first event as OpenAI\'s error JSON, and after it as response.failed and error events', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ status: 500 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const before = await caught(client(key).responses.create({ model, input: 'hi', store: false, stream: true }));
    expect(before).toBeInstanceOf(OpenAI.APIError);
    expect(before).toMatchObject({ status: 502, error: { type: expect.any(String), message: expect.any(String) } });

    // A channel of its own: the failing one rests after its failure.
    const breaking = await upstream.openai({ text: 'one two three four five', breakAfterChunks: 3, chunkDelayMs: 150 });
    const cut = uniqueModel();
    await channel(breaking, [cut]);
    const raw = await fetch(`${stack.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: cut, input: 'count', stream: true, store: false }),
    });
    expect(raw.status).toBe(200);
    const events = await rawEvents(raw);
    expect(events.slice(0, 2).map((e) => e.name)).toEqual(['response.created', 'response.in_progress']);
    expect(events.slice(-2).map((e) => e.name)).toEqual(['response.failed', 'error']);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, at) => at));
    expect(events.at(-2)!.data.response).toMatchObject({ id: events[0]!.data.response.id, status: 'failed', error: { message: expect.any(String) } });
    expect(events.at(-1)!.data.error).toMatchObject({ message: expect.any(String) });
    const sdk = await caught(client(key).responses.stream({ model: cut, input: 'count', store: false }).finalResponse());
    expect(sdk).toBeInstanceOf(Error);
  });

  it('serves the Vercel AI SDK\'s default model: generateText with a tool, and streamText', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'Hi from the AI SDK path' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });
    const whole = await generateText({ model: provider(model), prompt: 'Say hi', providerOptions: { openai: { store: false } } });
    expect(whole.text).toBe('Hi from the AI SDK path');
    expect(whole.usage.outputTokens).toBeGreaterThan(0);
    expect(mock.requests.at(-1)!.path).toBe('/v1/chat/completions');

    const streamed = streamText({ model: provider(model), prompt: 'Say hi', providerOptions: { openai: { store: false } } });
    expect(await streamed.text).toBe('Hi from the AI SDK path');
    expect((await streamed.usage).outputTokens).toBeGreaterThan(0);

    mock.setBehaviour({ toolCall: { name: 'get_weather', arguments: '{"location":"Paris"}' } });
    const called = await generateText({
      model: provider(model), prompt: 'Weather in Paris?', providerOptions: { openai: { store: false } },
      tools: { get_weather: tool({ description: 'The weather', inputSchema: jsonSchema<{ location: string }>({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }) }) },
    });
    expect(called.toolCalls).toMatchObject([{ toolName: 'get_weather', input: { location: 'Paris' } }]);
  });
});

describe('the Responses door on an anthropic channel', () => {
  it('translates responses.create to Messages and back, cache reads counted in input_tokens', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'Bonjour from Claude' });
    const model = uniqueModel();
    await channel(mock, ['claude-upstream'], { model_mapping: { [model]: 'claude-upstream' }, key: 'sk-ant-channel-key' });
    const key = await apiKey();
    const response = await client(key.key).responses.create({ model, instructions: 'Answer in French.', input: 'Say hello', max_output_tokens: 100, temperature: 1.5, store: false });
    expect(response).toMatchObject({ object: 'response', status: 'completed', model, output_text: 'Bonjour from Claude' });
    const sent = mock.requests.at(-1)!;
    expect(sent).toMatchObject({ path: '/v1/messages', apiKey: 'sk-ant-channel-key' });
    expect(sent.body).toEqual({
      model: 'claude-upstream', max_tokens: 100, stream: false, temperature: 1,
      system: [{ type: 'text', text: 'Answer in French.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
    });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(response.usage!.total_tokens);
  });

  it('charges and logs the prompt cache\'s writes, which Responses\' usage has no field for, at the channel\'s cache_write_ratio, whole and streamed', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ cacheUse: { read: 100, written: 200 }, text: 'Noted.' });
    const model = uniqueModel();
    await channel(mock, [model], { cache_read_ratio: 0.1, cache_write_ratio: 1.25 });
    const { key, id } = await apiKey();
    const input = 'Keep this note for later. '.repeat(80);
    const whole = await client(key).responses.create({ model, input, max_output_tokens: 50, store: false }, { headers: { 'x-request-id': `cache-write-${seq}-whole` } });
    // The client sees Responses' own usage fields only.
    expect(Object.keys(whole.usage!).sort()).toEqual(['input_tokens', 'input_tokens_details', 'output_tokens', 'output_tokens_details', 'total_tokens']);
    expect(whole.usage!.input_tokens_details.cached_tokens).toBe(100);
    const charge = (usage: { input_tokens: number; output_tokens: number }) => usage.input_tokens - 300 + usage.output_tokens + Math.ceil(100 * 0.1 + 200 * 1.25);
    expect(await loggedRow(stack, `cache-write-${seq}-whole`)).toMatchObject({ route: '/v1/responses', cache_read_tokens: 100, cache_write_tokens: 200, quota: charge(whole.usage!) });

    const streamed = await fetch(`${stack.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': `cache-write-${seq}-stream` },
      body: JSON.stringify({ model, input, max_output_tokens: 50, store: false, stream: true }),
    });
    const events = await rawEvents(streamed);
    const completed = events.at(-1)!.data.response;
    expect(completed.usage).not.toHaveProperty('cache_write_tokens');
    expect(await loggedRow(stack, `cache-write-${seq}-stream`)).toMatchObject({ cache_read_tokens: 100, cache_write_tokens: 200, quota: charge(completed.usage) });
    await expect.poll(() => usedQuota(stack, id)).toBe(charge(whole.usage!) + charge(completed.usage));
  });

  it('streams a tool call from Messages events, takes its output back, and reasons with a signature replayed', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const ask = { role: 'user' as const, content: 'What is the weather in San Francisco?' };
    const first = await client(key).responses.stream({ model, input: [ask], tools: [weatherTool], store: false }).finalResponse();
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(JSON.parse(call.arguments)).toMatchObject({ location: 'San Francisco, CA' });
    const answer = await client(key).responses.create({
      model, tools: [weatherTool], store: false,
      input: [ask, ...first.output.map((item) => item as OpenAI.Responses.ResponseInputItem), { type: 'function_call_output', call_id: call.call_id, output: 'Sunny, 21 °C' }],
    });
    expect(answer.status).toBe('completed');
    const sent = mock.requests.at(-1)!.body as { messages: { role: string; content: Record<string, unknown>[] }[] };
    expect(sent.messages.at(-1)).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: [{ type: 'text', text: 'Sunny, 21 °C' }] }] });

    const thought = await client(key).responses.stream({ model, input: 'Think, then answer.', reasoning: { effort: 'low' }, max_output_tokens: 4000, store: false }).finalResponse();
    const reasoning = thought.output.find((item) => item.type === 'reasoning') as OpenAI.Responses.ResponseReasoningItem;
    expect(reasoning.summary[0]!.text).toMatch(/answer briefly/);
    expect(mock.requests.at(-1)!.body).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 1024 } });
    expect(reasoning.encrypted_content).toMatch(/^sig_mock_/);
    await client(key).responses.create({ model, store: false, reasoning: { effort: 'low' }, max_output_tokens: 4000, input: [{ role: 'user', content: 'Think, then answer.' }, ...thought.output.map((item) => item as OpenAI.Responses.ResponseInputItem), { role: 'user', content: 'Again.' }] });
    const replayed = mock.requests.at(-1)!.body as { messages: { content: Record<string, unknown>[] }[] };
    expect(replayed.messages[1]!.content[0]).toEqual({ type: 'thinking', thinking: reasoning.summary[0]!.text, signature: reasoning.encrypted_content });
  });

  it('serves the Vercel AI SDK\'s generateText and streamText', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.anthropic({ text: 'Claude via the AI SDK' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });
    const whole = await generateText({ model: provider(model), prompt: 'Say hi', providerOptions: { openai: { store: false } } });
    expect(whole.text).toBe('Claude via the AI SDK');
    const streamed = streamText({ model: provider(model), prompt: 'Say hi', providerOptions: { openai: { store: false } } });
    expect(await streamed.text).toBe('Claude via the AI SDK');
    expect((await streamed.usage).inputTokens).toBeGreaterThan(0);
    expect(mock.requests.at(-1)!.path).toBe('/v1/messages');
  });
});

describe('tenants on the Responses door', () => {
  it('holds a burst within its key\'s quota, refuses a spent key for good and a model the key may not use, before any upstream call', async ({ stack, upstream, channel, apiKey, client }) => {
    // 1 input token and 16 output a response (the mock's words), held at its input's JSON bytes plus max_output_tokens 16.
    const mock = await upstream.openai({ delayMs: 50, text: Array.from({ length: 16 }, () => 'w').join(' ') });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { id, key } = await apiKey({ unlimited_quota: false, remain_quota: 100 });
    const answers = await Promise.all(Array.from({ length: 40 }, () => client(key).responses.create({ model, input: 'hi', max_output_tokens: 16, store: false }).then(() => 200, (error: { status: number; code?: string }) => error)));
    const served = answers.filter((answer) => answer === 200).length;
    expect(served).toBeGreaterThanOrEqual(1);
    expect(served).toBeLessThanOrEqual(100 / 17);
    for (const refused of answers.filter((answer) => answer !== 200)) expect(refused).toMatchObject({ status: 429 });
    await expect.poll(() => usedQuota(stack, id)).toBe(served * 17);
    await expect.poll(async () => (await caught(client(key).responses.create({ model, input: 'hi', max_output_tokens: 16, store: false })) as { code?: string })?.code).toBe('insufficient_quota');

    const { key: narrow } = await apiKey({ models: ['another-model'] });
    const before = mock.requests.length;
    const forbidden = await caught(client(narrow).responses.create({ model, input: 'hi', store: false }));
    expect(forbidden).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(mock.requests).toHaveLength(before);
  });
});

describe('stored responses', () => {
  /** A user of its own with a key: what one user stores, another cannot see. */
  async function otherUser(stack: { adminData(method: string, path: string, body?: unknown): Promise<any> }) {
    const user = await stack.adminData('POST', '/api/user/', { username: `resp${++seq}`, password: 'responses-password' });
    const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
    return key as string;
  }

  it('keeps a response by default: retrieve, input_items, previous_response_id rebuilt for the provider, delete; another user\'s id is 404', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Nice to meet you, Ada.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(key);
    const first = await openai.responses.create({ model, instructions: 'Be brief.', input: 'My name is Ada.', metadata: { turn: '1' } });
    expect((first as unknown as { store: boolean }).store).toBe(true);
    const kept = await openai.responses.retrieve(first.id);
    expect(kept).toMatchObject({ id: first.id, object: 'response', status: 'completed', metadata: { turn: '1' }, output: first.output, usage: first.usage });
    const items = await openai.responses.inputItems.list(first.id);
    expect(items.data).toEqual([{ id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'My name is Ada.' }] }]);

    // The second turn, streamed: the gateway sends the provider the whole conversation, without the first turn's instructions.
    mock.setBehaviour({ text: 'Your name is Ada.' });
    const second = await openai.responses.stream({ model, input: 'What is my name?', previous_response_id: first.id }).finalResponse();
    expect(second.output_text).toBe('Your name is Ada.');
    expect(second.previous_response_id).toBe(first.id);
    expect(mock.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'Nice to meet you, Ada.' },
      { role: 'user', content: 'What is my name?' },
    ]);
    // Stored before the stream ended: the next request finds it at once.
    const secondItems = await openai.responses.inputItems.list(second.id, { order: 'asc' });
    expect(secondItems.data.map((item) => item.type)).toEqual(['message', 'message', 'message']);
    expect((secondItems.data.at(-1) as unknown as { content: unknown }).content).toEqual([{ type: 'input_text', text: 'What is my name?' }]);

    // Another user: the same ids are unknown, for every route.
    const stranger = client(await otherUser(stack));
    const before = mock.requests.length;
    for (const attempt of [
      () => stranger.responses.retrieve(first.id),
      () => stranger.responses.inputItems.list(first.id),
      () => stranger.responses.delete(first.id),
      () => stranger.responses.create({ model, input: 'And my name?', previous_response_id: first.id }),
    ]) {
      const refused = await caught(attempt());
      expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    }
    expect(mock.requests).toHaveLength(before);
    expect((await openai.responses.retrieve(first.id)).id).toBe(first.id);

    // An item_reference (the Vercel AI SDK sends one for an earlier turn's text) is the stored item it names, the user's own.
    await openai.responses.create({ model, store: false, input: [{ role: 'user', content: 'Hi.' }, { type: 'item_reference', id: first.output[0]!.id! }, { role: 'user', content: 'Again?' }] });
    expect(mock.requests.at(-1)!.body.messages).toEqual([{ role: 'user', content: 'Hi.' }, { role: 'assistant', content: 'Nice to meet you, Ada.' }, { role: 'user', content: 'Again?' }]);
    const foreign = await caught(stranger.responses.create({ model, store: false, input: [{ type: 'item_reference', id: first.output[0]!.id! }] }));
    expect(foreign).toMatchObject({ status: 404, param: 'input[0]' });

    // store: false keeps nothing; a deleted response is gone.
    const unkept = await openai.responses.create({ model, input: 'Forget this.', store: false });
    expect(await caught(openai.responses.retrieve(unkept.id))).toBeInstanceOf(OpenAI.NotFoundError);
    await openai.responses.delete(first.id);
    expect(await caught(openai.responses.retrieve(first.id))).toBeInstanceOf(OpenAI.NotFoundError);
    const raw = await fetch(`${stack.gateway.url}/v1/responses/${first.id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(raw.status).toBe(404);
    expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringContaining(first.id) } });
  });

  it('bound item references: at most 1,000 a request, and the conversation they rebuild no larger than a request may be', async ({ stack, upstream, channel, client }) => {
    const mock = await upstream.openai({ text: 'Stored.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const openai = client(await otherUser(stack));
    const large = await openai.responses.create({ model, input: 'x'.repeat(20_000) });
    const item = (await openai.responses.inputItems.list(large.id)).data[0]!.id!;
    const before = mock.requests.length;
    // Past the cap, the first reference too many is named.
    const tooMany = await caught(openai.responses.create({ model, store: false, input: Array.from({ length: 1001 }, () => ({ type: 'item_reference' as const, id: item })) }));
    expect(tooMany).toMatchObject({ status: 400, param: 'input[1000]', message: expect.stringContaining('1000') });
    // 1,000 references to one 20 kB item: a 60 kB body that would be 20 MB, past BODY_LIMIT_BYTES (10 MiB).
    const tooLarge = await caught(openai.responses.create({ model, store: false, input: Array.from({ length: 1000 }, () => ({ type: 'item_reference' as const, id: item })) }));
    expect(tooLarge).toMatchObject({ status: 400, param: 'input', message: expect.stringContaining('BODY_LIMIT_BYTES') });
    expect(mock.requests).toHaveLength(before);
    // A few references to it, repeated, are each the stored item.
    await openai.responses.create({ model, store: false, input: [{ type: 'item_reference', id: item }, { type: 'item_reference', id: large.output[0]!.id! }, { type: 'item_reference', id: item }] });
    expect((mock.requests.at(-1)!.body as { messages: { role: string }[] }).messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('count against what the user may keep: at its cap a stored response is refused before it runs, store: false still served', async ({ stack, upstream, channel, client }) => {
    const mock = await upstream.openai({ text: 'Noted.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const openai = client(await otherUser(stack));
    const large = await openai.responses.create({ model, input: 'x'.repeat(200_000) });
    expect(large.status).toBe('completed');
    const before = mock.requests.length;
    const full = await caught(openai.responses.create({ model, input: 'One more, stored.' }));
    expect(full).toBeInstanceOf(OpenAI.RateLimitError);
    expect(full).toMatchObject({ status: 429, code: 'insufficient_quota', message: expect.stringMatching(/FILE_USER_MAX_BYTES/) });
    expect(mock.requests).toHaveLength(before);
    expect((await openai.responses.create({ model, input: 'Not stored.', store: false })).output_text).toBe('Noted.');
    // Deleting it gives the bytes back.
    await openai.responses.delete(large.id);
    expect((await openai.responses.create({ model, input: 'Stored again.' })).status).toBe('completed');
  });

  it('serves the Vercel AI SDK\'s multi-step tool loop, which refers to stored items by id', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ toolCall: { name: 'get_weather', arguments: '{"location":"Paris"}' } });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });
    const { stepCountIs } = await import('ai');
    let asked = 0;
    const result = await generateText({
      model: provider(model), prompt: 'Weather in Paris?', stopWhen: stepCountIs(3),
      tools: {
        get_weather: tool({
          description: 'The weather',
          inputSchema: jsonSchema<{ location: string }>({ type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }),
          execute: async () => {
            asked += 1;
            mock.setBehaviour({ text: 'Sunny in Paris.' });
            return 'Sunny, 21 °C';
          },
        }),
      },
    });
    expect(asked).toBe(1);
    expect(result.text).toBe('Sunny in Paris.');
    expect((mock.requests.at(-1)!.body.messages as unknown[]).at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('Sunny, 21 °C') });
  });
});

describe('background responses', () => {
  it('answers at once with status queued, runs on the gateway\'s queues, and is polled to completed, logged and charged', async ({ stack, upstream, channel, apiKey, client }) => {
    // Slow to begin and slow to stream, so a poll sees each status.
    const mock = await upstream.openai({ text: 'Done in the background', delayMs: 1500, chunkDelayMs: 400 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const openai = client(key.key);
    const started = Date.now();
    const queued = await openai.responses.create({ model, input: 'Work slowly.', background: true });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(queued).toMatchObject({ object: 'response', status: 'queued', background: true, output: [] });
    expect((await openai.responses.retrieve(queued.id)).status).toBe('queued');
    await expect.poll(async () => (await openai.responses.retrieve(queued.id)).status, { timeout: 10_000, interval: 100 }).toBe('in_progress');
    await expect.poll(async () => (await openai.responses.retrieve(queued.id)).status, { timeout: 10_000, interval: 200 }).toBe('completed');
    const done = await openai.responses.retrieve(queued.id);
    expect(done).toMatchObject({ id: queued.id, background: true, output_text: 'Done in the background' });
    expect(mock.requests.at(-1)!.body).toMatchObject({ stream: true });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(done.usage!.total_tokens);
    // It continues a conversation as any stored response does.
    mock.setBehaviour({ text: 'And again.' });
    const next = await openai.responses.create({ model, input: 'Once more.', previous_response_id: queued.id, store: false });
    expect(next.output_text).toBe('And again.');
    expect(mock.requests.at(-1)!.body.messages).toHaveLength(3);
  });

  it('streams a background response, and a client whose connection dropped resumes after the last event it read', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'one two three four five six', chunkDelayMs: 150 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(key);
    const stream = await openai.responses.create({ model, input: 'count', background: true, stream: true });
    const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) {
      seen.push(event);
      if (seen.length === 5) break;
    }
    const id = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    expect(id).toMatch(/^resp_/);
    const resumed = await openai.responses.retrieve(id, { stream: true, starting_after: seen.at(-1)!.sequence_number });
    const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of resumed) rest.push(event);
    const all = [...seen, ...rest];
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, at) => at));
    expect(all.map((event) => event.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      ...Array.from({ length: 6 }, () => 'response.output_text.delta'),
      'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    const completed = all.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response).toMatchObject({ id, status: 'completed', background: true });
    expect((await openai.responses.retrieve(id)).output_text).toBe('one two three four five six');
    // Read again from the start, after it ended: the same events.
    const again: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await openai.responses.retrieve(id, { stream: true })) again.push(event);
    expect(again).toEqual(all);
    const foreground = await openai.responses.create({ model, input: 'hi' });
    expect(await caught(openai.responses.retrieve(foreground.id, { stream: true }).then(async (events) => { for await (const _ of events) { /* refused before */ } }))).toMatchObject({ status: 400 });
  });

  it('refuses GET ?stream=true at once for a background response created without stream', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Slowly', delayMs: 4000 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(key);
    const queued = await openai.responses.create({ model, input: 'Take your time.', background: true });
    const started = Date.now();
    const refused = await caught(openai.responses.retrieve(queued.id, { stream: true }).then(async (events) => { for await (const _ of events) { /* refused before */ } }));
    expect(refused).toMatchObject({ status: 400, param: 'stream' });
    expect(Date.now() - started).toBeLessThan(2000);
    await openai.responses.cancel(queued.id);
  });

  it('allows a response two stream followers at once on a gateway, then 429 with Retry-After; a follower gone frees its place', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'one two three four five six seven eight', chunkDelayMs: 500 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const creator = new AbortController();
    const created = await fetch(`${stack.gateway.url}/v1/responses`, { method: 'POST', headers, body: JSON.stringify({ model, input: 'count', background: true, stream: true }), signal: creator.signal });
    expect(created.status).toBe(200);
    const reader = created.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const id = /"id":"(resp_[^"]+)"/.exec(first)![1]!;
    const follow = (signal?: AbortSignal) => fetch(`${stack.gateway.url}/v1/responses/${id}?stream=true`, { headers, signal });
    const second = new AbortController();
    expect((await follow(second.signal)).status).toBe(200);
    const third = await follow();
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(await third.json()).toMatchObject({ error: { message: expect.stringContaining('this response already has 2 followers') } });
    second.abort();
    creator.abort();
    // The followers notice their clients gone at their next poll, and give back their places.
    await expect.poll(async () => {
      const again = await follow();
      await again.body?.cancel();
      return again.status;
    }, { timeout: 10_000, interval: 300 }).toBe(200);
  });

  it('is cancelled while it runs: its job ends, it stays cancelled; an ended or foreground response is not cancelled', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Too late', delayMs: 4000 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(key);
    const queued = await openai.responses.create({ model, input: 'Take your time.', background: true });
    await expect.poll(() => mock.inFlight, { timeout: 10_000 }).toBe(1);
    const cancelled = await openai.responses.cancel(queued.id);
    expect(cancelled).toMatchObject({ id: queued.id, status: 'cancelled' });
    await expect.poll(() => mock.aborted, { timeout: 10_000 }).toBe(1);
    expect((await openai.responses.retrieve(queued.id)).status).toBe('cancelled');
    expect((await openai.responses.cancel(queued.id)).status).toBe('cancelled');

    mock.setBehaviour({ text: 'Quick' });
    const foreground = await openai.responses.create({ model, input: 'hi' });
    expect(await caught(openai.responses.cancel(foreground.id))).toMatchObject({ status: 400 });
    const refused = await caught(openai.responses.create({ model, input: 'hi', background: true, store: false }));
    expect(refused).toMatchObject({ status: 400, param: 'store' });
    expect(await caught(openai.responses.cancel('resp_unknown'))).toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('/v1/responses lines in the Batch API', () => {
  async function batchOf(openai: OpenAI, lines: unknown[]) {
    const file = await openai.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n'), 'batch.jsonl'), purpose: 'batch' });
    const created = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/responses' as '/v1/chat/completions', completion_window: '24h' });
    let batch = created;
    await expect.poll(async () => (batch = await openai.batches.retrieve(created.id)).status, { timeout: 30_000, interval: 200 }).toMatch(/^(completed|failed)$/);
    return batch;
  }

  it('runs each line as a response on the conversation model, and refuses a line that refers to a stored response', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'Batched by Claude' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(key);
    const line = (i: number, body: Record<string, unknown> = {}) => ({ custom_id: `r-${i}`, method: 'POST', url: '/v1/responses', body: { model, input: `line ${i}`, ...body } });
    const done = await batchOf(openai, [line(1), line(2, { instructions: 'Be brief.' })]);
    expect(done).toMatchObject({ status: 'completed', request_counts: { total: 2, completed: 2, failed: 0 } });
    const output = (await (await openai.files.content(done.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(output.map((l) => l.custom_id)).toEqual(['r-1', 'r-2']);
    for (const result of output) {
      expect(result.response).toMatchObject({ status_code: 200, body: { object: 'response', status: 'completed', model, output: [{ type: 'message', content: [{ type: 'output_text', text: 'Batched by Claude' }] }] } });
    }
    expect(mock.requests.filter((r) => r.path === '/v1/messages')).toHaveLength(2);

    const refused = await batchOf(openai, [line(1), line(2, { previous_response_id: 'resp_x' })]);
    expect(refused.status).toBe('failed');
    expect(refused.errors!.data![0]).toMatchObject({ line: 2, param: 'body.previous_response_id' });
  });
});
