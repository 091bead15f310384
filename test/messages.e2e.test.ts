/**
 * Anthropic's Messages door end to end: real Redis, admin-worker, completion-worker and gateway
 * processes, the test kit's mock upstreams over real HTTP, and Anthropic's own SDK
 * (`@anthropic-ai/sdk`) as the client, with nothing changed but the base URL and key. On an
 * anthropic channel the request passes through untranslated (cache marks, thinking blocks and
 * betas arrive as sent); on an openai channel it goes through the conversation model to chat
 * completions and back.
 */
import { describe, expect } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { caught, postJson } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string, fields: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
  new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0, timeout: 15_000, ...fields }));

let seq = 0;
const uniqueModel = () => `messages-model-${++seq}`;

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a place',
  input_schema: { type: 'object' as const, properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location'] },
};

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

describe('the Messages door on an anthropic channel', () => {
  it('answers messages.create whole, passed through with the channel\'s model and key, charged with every prompt token', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'Bonjour from Claude' });
    const model = uniqueModel();
    await channel(mock, ['claude-upstream'], { model_mapping: { [model]: 'claude-upstream' }, key: 'sk-ant-channel-key' });
    const key = await apiKey();
    const message = await client(key.key, { defaultHeaders: { 'anthropic-version': '2023-06-01' } }).messages.create({ model, max_tokens: 100, system: 'Answer in French.', messages: [{ role: 'user', content: 'Say hello' }] });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model, stop_reason: 'end_turn', content: [{ type: 'text', text: 'Bonjour from Claude' }] });
    const sent = mock.requests.at(-1)!;
    expect(sent).toMatchObject({ path: '/v1/messages', apiKey: 'sk-ant-channel-key', anthropicVersion: '2023-06-01' });
    expect(sent.body).toMatchObject({ model: 'claude-upstream', system: 'Answer in French.', max_tokens: 100, stream: false });
    const total = message.usage.input_tokens + message.usage.output_tokens;
    await expect.poll(() => usedQuota(stack, key.id)).toBe(total);
  });

  it('streams with Anthropic\'s exact event sequence, and messages.stream gives the final message', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'one two three' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    // The raw stream: event names and their order, as Anthropic sends them.
    const response = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'count' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await response.text();
    const names = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    expect(names).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    for (const block of text.trim().split('\n\n')) {
      const [event, data] = block.split('\n');
      expect(JSON.parse(data!.slice('data: '.length)).type).toBe(event!.slice('event: '.length));
    }
    // The SDK's own stream helper.
    const stream = client(key).messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'count' }] });
    let streamed = '';
    stream.on('text', (delta) => { streamed += delta; });
    const final = await stream.finalMessage();
    expect(streamed).toBe('one two three');
    expect(final).toMatchObject({ model, stop_reason: 'end_turn', content: [{ type: 'text', text: 'one two three' }] });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(mock.requests.at(-1)!.body.stream).toBe(true);
  });

  it('charges a streamed message its usage (input from message_start, output from message_delta), and ends a stream the upstream breaks off with an error event', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'one two three four' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const final = await client(key.key).messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'count' }] }).finalMessage();
    await expect.poll(() => usedQuota(stack, key.id)).toBe(final.usage.input_tokens + final.usage.output_tokens);

    mock.setBehaviour({ text: 'one two three four', streamError: { afterEvents: 5 } });
    const broken = client(key.key).messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'count' }] });
    let text = '';
    broken.on('text', (delta) => { text += delta; });
    await expect(broken.finalMessage()).rejects.toMatchObject({ error: { type: 'error', error: { type: 'overloaded_error' } } });
    expect(text).toBe('one two');
  });

  it('runs a tool turn: the tool_use streamed, its tool_result sent back', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const ask: Anthropic.MessageParam = { role: 'user', content: 'What is the weather in San Francisco?' };
    const first = await client(key).messages.stream({ model, max_tokens: 200, tools: [weatherTool], messages: [ask] }).finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(call).toMatchObject({ name: 'get_weather', input: { location: 'San Francisco, CA' } });
    const answer = await client(key).messages.create({
      model, max_tokens: 200, tools: [weatherTool],
      messages: [ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 °C' }] }],
    });
    expect(answer.stop_reason).toBe('end_turn');
    const sent = mock.requests.at(-1)!.body as { messages: { content: { type: string; tool_use_id?: string }[] }[] };
    expect(sent.messages.at(-1)!.content).toEqual([{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 °C' }]);
  });

  it('hands cache_control marks, thinking blocks with their signatures and the client\'s betas to the upstream byte for byte', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
    const first = await client(key).messages.stream({ model, max_tokens: 2000, thinking, messages: [{ role: 'user', content: 'Think, then answer.' }] }).finalMessage();
    expect(first.content[0]).toEqual({ type: 'thinking', thinking: expect.stringContaining('answer briefly'), signature: expect.stringMatching(/^sig_mock_/) });
    const system = [{ type: 'text' as const, text: 'You are a careful assistant. '.repeat(20), cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } }];
    const history: Anthropic.MessageParam[] = [
      { role: 'user', content: 'Think, then answer.' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'text', text: 'And again?', cache_control: { type: 'ephemeral' } }] },
    ];
    const betas = 'interleaved-thinking-2025-05-14,a-beta-the-gateway-never-heard-of-2099-01-01';
    await client(key).messages.create({ model, max_tokens: 2000, thinking, system, messages: history, output_config: { effort: 'low' } } as Anthropic.MessageCreateParamsNonStreaming, { headers: { 'anthropic-beta': betas } });
    const sent = mock.requests.at(-1)!;
    expect(sent.anthropicBeta).toBe(betas);
    const raw = JSON.parse(sent.rawBody) as Record<string, unknown>;
    expect(raw.system).toEqual(system);
    expect(raw.messages).toEqual(history);
    // A field the gateway does not know goes on as it came.
    expect(raw.output_config).toEqual({ effort: 'low' });
    // The thinking block's bytes, signature and all, are in what the upstream read.
    expect(sent.rawBody).toContain(JSON.stringify(first.content[0]));
  });

  it('counts tokens on the channel, uncharged, and refuses a bad key and a bad request in Anthropic\'s shape', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const counted = await client(key.key).messages.countTokens({ model, system: 'Be brief.', messages: [{ role: 'user', content: 'How many tokens is this?' }] });
    expect(counted.input_tokens).toBe(Math.ceil('Be brief.How many tokens is this?'.length / 4));
    expect(mock.requests.at(-1)!.path).toBe('/v1/messages/count_tokens');

    const bad = await caught(client('sk-not-a-key').messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    expect(bad).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(bad).toMatchObject({ status: 401, error: { type: 'error', error: { type: 'authentication_error' } } });

    const invalid = await postJson(`${stack.gateway.url}/v1/messages`, { model, messages: [{ role: 'user', content: 'hi' }] }, { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' });
    expect(invalid.status).toBe(400);
    expect(invalid.json).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens/) } });
    const empty = await caught(client(key.key).messages.create({ model, max_tokens: 10, messages: [] }));
    expect(empty).toBeInstanceOf(Anthropic.BadRequestError);
    expect(empty.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'invalid messages: must hold at least one message' } });
    expect(mock.requests.filter((r) => r.path === '/v1/messages')).toHaveLength(0);
    // The count is never charged: a message after it is charged its own usage alone.
    const message = await client(key.key).messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(message.usage.input_tokens + message.usage.output_tokens);
  });

  it('refuses a Files API file, a container, MCP servers and server tools in Anthropic\'s shape, naming the field and why, before any upstream call', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const fileDocument = await caught(client(key).messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_another_tenants' } } as never, { type: 'text', text: 'Summarise it.' }] }] }));
    expect(fileDocument).toBeInstanceOf(Anthropic.BadRequestError);
    expect(fileDocument.error).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^invalid messages\[0\]\.content\[0\]\.source\.type: is not served: a file belongs to the channel's Anthropic account, which every caller of this gateway shares/) } });
    const search = await caught(client(key).messages.create({ model, max_tokens: 10, tools: [{ type: 'web_search_20250305', name: 'web_search' }], messages: [{ role: 'user', content: 'news?' }] }));
    expect(search.error.error.message).toMatch(/^invalid tools\[0\]\.type: is not served: web_search_20250305 is a server tool/);
    const container = await caught(client(key).messages.create({ model, max_tokens: 10, container: 'container_another_tenants', messages: [{ role: 'user', content: 'hi' }] } as never));
    expect(container).toMatchObject({ status: 400 });
    expect(container.error.error.message).toMatch(/^invalid container: is not served/);
    expect(mock.requests).toHaveLength(0);
  });

  it('answers an upstream overload as 529 overloaded_error, and logs the request under its route', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ status: 529 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const failed = await caught(client(key).messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    expect(failed).toBeInstanceOf(Anthropic.APIError);
    expect(failed).toMatchObject({ status: 529, error: { type: 'error', error: { type: 'overloaded_error' } } });
    mock.setBehaviour({});
    const ok = await client(key).messages.create({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(ok.request_id).toBe(ok.response.headers.get('x-request-id'));
    expect(failed.requestID).toEqual(expect.any(String));
    const row = await loggedRow(stack, ok.response.headers.get('x-request-id')!);
    expect(row).toMatchObject({ route: '/v1/messages', model, status: 200, prompt_tokens: ok.data.usage.input_tokens, completion_tokens: ok.data.usage.output_tokens });
  });
});

describe('the Messages door keeps a key\'s limits', () => {
  it('refuses a model the key may not use (403 permission_error) and a key out of quota (429), before any upstream call', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const [allowed, other] = [uniqueModel(), uniqueModel()];
    await channel(mock, [allowed, other]);
    const limited = await apiKey({ models: [allowed] });
    const forbidden = await caught(client(limited.key).messages.create({ model: other, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    expect(forbidden).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(forbidden.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    const poor = await apiKey({ unlimited_quota: false, remain_quota: 0 });
    const broke = await caught(client(poor.key).messages.create({ model: allowed, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }));
    expect(broke).toBeInstanceOf(Anthropic.RateLimitError);
    expect(broke.headers.get('x-should-retry')).toBe('false');
    expect(mock.requests).toHaveLength(0);
    // The count is refused too: a key out of quota learns nothing of the models.
    await expect(client(poor.key).messages.countTokens({ model: allowed, messages: [{ role: 'user', content: 'x'.repeat(100) }] })).rejects.toBeInstanceOf(Anthropic.RateLimitError);
  });
});

describe('the Messages door on an openai channel', () => {
  it('translates messages.create to chat completions and back, cached tokens as cache_read_input_tokens', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Hello from GPT', usageFields: { prompt_tokens_details: { cached_tokens: 2 } } });
    const model = uniqueModel();
    await channel(mock, ['gpt-upstream'], { model_mapping: { [model]: 'gpt-upstream' } });
    const key = await apiKey();
    const message = await client(key.key).messages.create({
      model, max_tokens: 64, system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      stop_sequences: ['END'], metadata: { user_id: 'user-7' }, messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model, stop_reason: 'end_turn', content: [{ type: 'text', text: 'Hello from GPT' }] });
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.cache_read_input_tokens).toBe(2);
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.body).toEqual({
      model: 'gpt-upstream', stream: false, max_tokens: 64, stop: ['END'], user: 'user-7',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }],
    });
    // Charged every prompt token (the cached ones too) and the output.
    const total = message.usage.input_tokens + message.usage.cache_read_input_tokens! + message.usage.output_tokens;
    await expect.poll(() => usedQuota(stack, key.id)).toBe(total);
  });

  it('streams a chat completion as Anthropic\'s events: text, then a tool call, and takes the tool result back', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Plain words here' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const stream = client(key).messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    let streamed = '';
    stream.on('text', (delta) => { streamed += delta; });
    const final = await stream.finalMessage();
    expect(streamed).toBe('Plain words here');
    expect(final).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'Plain words here' }] });
    expect(final.usage.output_tokens).toBeGreaterThan(0);

    mock.setBehaviour({ toolCall: { name: 'get_weather', arguments: '{"location":"Paris"}' } });
    const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
    const raw = await fetch(`${stack.gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, max_tokens: 50, stream: true, tools: [weatherTool], messages: [ask] }),
    });
    const names = [...(await raw.text()).matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    expect(names[0]).toBe('message_start');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(names.filter((n) => n === 'content_block_start').length).toBe(names.filter((n) => n === 'content_block_stop').length);

    const called = await client(key).messages.stream({ model, max_tokens: 50, tools: [weatherTool], messages: [ask] }).finalMessage();
    expect(called.stop_reason).toBe('tool_use');
    const call = called.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    expect(call).toMatchObject({ name: 'get_weather', input: { location: 'Paris' } });
    expect(mock.requests.at(-1)!.body.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: weatherTool.description, parameters: weatherTool.input_schema } }]);

    mock.setBehaviour({ text: 'It is sunny.' });
    const answer = await client(key).messages.create({
      model, max_tokens: 50, tools: [weatherTool],
      messages: [ask, { role: 'assistant', content: called.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 °C' }] }],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'It is sunny.' }]);
    expect(mock.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }] },
      { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 °C' },
    ]);
  });

  it('charges an estimate when the upstream reports no usage, whole or streamed', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Some words without a count', omitUsage: true });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const whole = await client(key.key).messages.create({ model, max_tokens: 50, messages: [{ role: 'user', content: 'Say something' }] });
    expect(whole.usage.input_tokens).toBeGreaterThan(0);
    expect(whole.usage.output_tokens).toBeGreaterThan(0);
    const charged = whole.usage.input_tokens + whole.usage.output_tokens;
    await expect.poll(() => usedQuota(stack, key.id)).toBe(charged);
    await client(key.key).messages.stream({ model, max_tokens: 50, messages: [{ role: 'user', content: 'Say something' }] }).finalMessage();
    await expect.poll(() => usedQuota(stack, key.id)).toBeGreaterThan(charged);
  });

  it('takes a thinking request and replayed thinking blocks, leaving them out of the chat request, and estimates countTokens', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai({ text: 'Thought about it.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const answer = await client(key).messages.create({
      model, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: 'Think.' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig_other' }, { type: 'redacted_thinking', data: 'opaque' }, { type: 'text', text: 'Done.' }] },
        { role: 'user', content: 'Again.' },
      ],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'Thought about it.' }]);
    const sent = mock.requests.at(-1)!.body as { messages: unknown[] };
    expect(sent.messages).toEqual([{ role: 'user', content: 'Think.' }, { role: 'assistant', content: 'Done.' }, { role: 'user', content: 'Again.' }]);
    expect(sent).not.toHaveProperty('thinking');

    const before = mock.requests.length;
    const counted = await client(key).messages.countTokens({ model, messages: [{ role: 'user', content: 'How many tokens is this?' }] });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(mock.requests).toHaveLength(before);
  });
});

describe('the Messages door on a gemini channel', () => {
  it('translates to generateContent and back, whole and streamed, and runs a tool turn', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.gemini({ text: 'Hello from Gemini' });
    const model = uniqueModel();
    await channel(mock, ['gemini-upstream'], { model_mapping: { [model]: 'gemini-upstream' } });
    const { key } = await apiKey();
    const message = await client(key).messages.create({ model, max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello' }] });
    expect(message).toMatchObject({ model, stop_reason: 'end_turn', content: [{ type: 'text', text: 'Hello from Gemini' }] });
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(mock.received.at(-1)).toMatchObject({
      model: 'gemini-upstream', method: 'generateContent',
      body: { systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }], generationConfig: { maxOutputTokens: 64 } },
    });

    let streamed = '';
    const stream = client(key).messages.stream({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Say hello' }] });
    stream.on('text', (delta) => { streamed += delta; });
    expect((await stream.finalMessage()).stop_reason).toBe('end_turn');
    expect(streamed).toBe('Hello from Gemini');
    expect(mock.received.at(-1)!.method).toBe('streamGenerateContent');

    const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Rome?' };
    const called = await client(key).messages.stream({ model, max_tokens: 64, tools: [weatherTool], messages: [ask] }).finalMessage();
    expect(called.stop_reason).toBe('tool_use');
    const call = called.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use')!;
    // The mock calls the first declared function with a sample of its schema: every string `mock`.
    expect(call).toMatchObject({ name: 'get_weather', input: { location: 'mock', unit: 'mock' } });
    const answer = await client(key).messages.create({
      model, max_tokens: 64, tools: [weatherTool],
      messages: [ask, { role: 'assistant', content: called.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny' }] }],
    });
    expect(answer.content).toEqual([{ type: 'text', text: 'The function get_weather returned {"content":"Sunny"}' }]);
    expect((mock.received.at(-1)!.body as { contents: unknown[] }).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Rome?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { location: 'mock', unit: 'mock' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { content: 'Sunny' } } }] },
    ]);
  });
});

describe('prompt tokens from the provider\'s cache', () => {
  it('are charged at the channel\'s cache_read_ratio and cache_write_ratio, every other token at 1, and the log row\'s quota is that charge', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ promptCache: true, text: 'Noted.' });
    const model = uniqueModel();
    const made = await channel(mock, [model], { cache_read_ratio: 0.1, cache_write_ratio: 1.25 });
    expect(made).toMatchObject({ cache_read_ratio: 0.1, cache_write_ratio: 1.25 });
    const { key, id } = await apiKey();
    const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You keep notes, one line each. '.repeat(40), cache_control: { type: 'ephemeral' } }];
    const ask = (requestId: string) => client(key).messages.create({ model, max_tokens: 50, system, messages: [{ role: 'user', content: 'Note this.' }] }, { headers: { 'x-request-id': requestId } });
    const written = await ask(`cache-price-${seq}-1`);
    const read = await ask(`cache-price-${seq}-2`);
    expect(written.usage.cache_creation_input_tokens).toBeGreaterThan(100);
    expect(read.usage.cache_read_input_tokens).toBe(written.usage.cache_creation_input_tokens);
    const charge = (usage: Anthropic.Usage) => usage.input_tokens + usage.output_tokens
      + Math.ceil((usage.cache_read_input_tokens ?? 0) * 0.1 + (usage.cache_creation_input_tokens ?? 0) * 1.25);
    const rows = [await loggedRow(stack, `cache-price-${seq}-1`), await loggedRow(stack, `cache-price-${seq}-2`)];
    expect(rows[0]).toMatchObject({ quota: charge(written.usage), cache_write_tokens: written.usage.cache_creation_input_tokens });
    expect(rows[1]).toMatchObject({ quota: charge(read.usage), cache_read_tokens: read.usage.cache_read_input_tokens });
    // The read costs a tenth of the written prompt: far below what every token at 1 would be.
    expect(rows[1].quota).toBeLessThan(read.usage.input_tokens + read.usage.output_tokens + read.usage.cache_read_input_tokens! / 2);
    await expect.poll(() => usedQuota(stack, id)).toBe(charge(written.usage) + charge(read.usage));
  });
});
