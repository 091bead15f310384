/**
 * Anthropic's own SDK against the mock: proves the mock speaks the wire format real Anthropic
 * clients expect (a whole message, a stream with a tool use, its errors), so tests built on it
 * (and on the gateway's Anthropic provider) mean something. What the SDK never sends (no key, no
 * version, no max_tokens) is checked over plain HTTP.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { startMockAnthropicUpstream, type MockAnthropicUpstream } from './mock-anthropic-upstream.ts';

const MODEL = 'claude-mock-1';
const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a place',
  input_schema: { type: 'object' as const, properties: { location: { type: 'string' }, unit: { type: 'string' } }, required: ['location'] },
};

let mock: MockAnthropicUpstream;
let client: Anthropic;

beforeAll(async () => {
  mock = await startMockAnthropicUpstream();
  client = new Anthropic({ apiKey: 'sk-ant-mock', baseURL: mock.url, maxRetries: 0 });
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

/** A raw POST, for what the SDK never sends. */
async function post(body: unknown, headers: Record<string, string> = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }) {
  const response = await fetch(`${mock.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as { type: string; error: { type: string; message: string } } };
}

describe('@anthropic-ai/sdk against the mock Anthropic upstream', () => {
  it('messages.create: a whole message, with tokens counted from the text', async () => {
    mock.setBehaviour({ text: 'Bonjour tout le monde' });
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system: 'Answer in French.',
      messages: [{ role: 'user', content: 'Say hello to everyone.' }],
    });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'end_turn', stop_sequence: null });
    expect(message.id).toMatch(/^msg_/);
    expect(message.content).toEqual([{ type: 'text', text: 'Bonjour tout le monde' }]);
    // "Answer in French." + "Say hello to everyone." is 39 characters; the reply 21.
    expect(message.usage).toMatchObject({ input_tokens: 10, output_tokens: 6 });
    expect(mock.requests[0]).toMatchObject({ method: 'POST', path: '/v1/messages', authorization: 'Bearer sk-ant-mock', body: { model: MODEL, max_tokens: 100 } });
    expect(mock.requests[0]!.anthropicVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('messages.stream: text, then a tool use whose input arrives in several pieces', async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 200,
      tools: [weatherTool],
      messages: [{ role: 'user', content: 'What is the weather in San Francisco?' }],
    });
    const kinds: string[] = [];
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    for await (const event of stream) kinds.push(event.type === 'content_block_delta' ? event.delta.type : event.type);
    const message = await stream.finalMessage();

    expect(kinds.slice(0, 2)).toEqual(['message_start', 'content_block_start']);
    expect(kinds.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(kinds.filter((kind) => kind === 'input_json_delta').length).toBeGreaterThan(2);
    expect(text).toBe('Let me look that up for you.');
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Let me look that up for you.' },
      { type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } },
    ]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);

    // The tool's result answered, the model replies in text; a result for no tool use is refused.
    const toolUse = message.content[1] as Anthropic.ToolUseBlock;
    const followUp = await client.messages.create({
      model: MODEL,
      max_tokens: 200,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'What is the weather in San Francisco?' },
        { role: 'assistant', content: message.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18C and sunny' }] },
      ],
    });
    expect(followUp.stop_reason).toBe('end_turn');
    const stray = client.messages.create({
      model: MODEL,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nope', content: 'x' }] }],
    });
    await expect(stray).rejects.toMatchObject({ status: 400, type: 'invalid_request_error' });
  });

  it('stops at a stop sequence and at max_tokens, as the stop reason says', async () => {
    mock.setBehaviour({ text: 'one two three four five six seven eight' });
    const stopped = await client.messages.create({ model: MODEL, max_tokens: 100, stop_sequences: [' three'], messages: [{ role: 'user', content: 'count' }] });
    expect(stopped).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: ' three', content: [{ type: 'text', text: 'one two' }] });
    const cut = await client.messages.create({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'count' }] });
    expect(cut).toMatchObject({ stop_reason: 'max_tokens', content: [{ type: 'text', text: 'one two ' }], usage: { output_tokens: 2 } });
  });

  it("surfaces the mock's failures as the SDK's errors, with their type and Retry-After", async () => {
    mock.next({ status: 529 }, { status: 429, retryAfter: 7 });
    const ask = () => client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    await expect(ask()).rejects.toMatchObject({ constructor: Anthropic.OverloadedError, status: 529, type: 'overloaded_error' });
    const limited = (await ask().catch((error: unknown) => error)) as APIError;
    expect(limited).toBeInstanceOf(Anthropic.RateLimitError);
    expect(limited.type).toBe('rate_limit_error');
    expect(limited.headers?.get('retry-after')).toBe('7');
  });

  it("throws a stream's error event as the SDK's APIError of that type", async () => {
    mock.setBehaviour({ streamError: { afterEvents: 4 } });
    const stream = client.messages.stream({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    await expect(stream.finalMessage()).rejects.toMatchObject({ type: 'overloaded_error' });
    expect(text).toBe('Hello!');
  });

  it('answers 429 rate_limit_error past its concurrency limit', async () => {
    mock.limitConcurrency(1, 3);
    mock.next({ delayMs: 300 });
    const first = client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    await mock.waitFor((m) => m.inFlight === 1);
    await expect(client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 429 });
    await expect(first).resolves.toMatchObject({ stop_reason: 'end_turn' });
    expect([mock.overLimit, mock.maxInFlight]).toEqual([1, 1]);
  });
});

describe('the mock\'s prompt cache (promptCache)', () => {
  it('writes the prefix up to the last cache mark, and a later turn reads it wherever the mark moved; a mock of its own has none', async () => {
    mock.setBehaviour({ promptCache: true, text: 'An answer of a few words.' });
    const system = [{ type: 'text' as const, text: 'You plan trips. '.repeat(20), cache_control: { type: 'ephemeral' as const } }];
    const ask = (text: string, marked: boolean) => ({ role: 'user' as const, content: [{ type: 'text' as const, text, ...(marked ? { cache_control: { type: 'ephemeral' as const } } : {}) }] });
    const first = await client.messages.create({ model: MODEL, max_tokens: 50, system, messages: [ask('A week in Lisbon?', true)] });
    expect(first.usage).toMatchObject({ input_tokens: 0, cache_read_input_tokens: 0 });
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(80);
    const messages = [ask('A week in Lisbon?', false), { role: 'assistant' as const, content: first.content[0]!.type === 'text' ? first.content[0]!.text : '' }, ask('And then Porto?', true)];
    const second = await client.messages.create({ model: MODEL, max_tokens: 50, system, messages });
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(second.usage.input_tokens).toBe(0);
    // Unmarked, nothing is cached; another mock (another deployment) has its own cache.
    expect((await client.messages.create({ model: MODEL, max_tokens: 50, messages: [ask('Hi', false)] })).usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: 0 });
    const other = await startMockAnthropicUpstream({ promptCache: true });
    try {
      const elsewhere = await new Anthropic({ apiKey: 'k', baseURL: other.url, maxRetries: 0 }).messages.create({ model: MODEL, max_tokens: 50, system, messages });
      expect(elsewhere.usage.cache_read_input_tokens).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('what the mock refuses, as Anthropic does', () => {
  const valid = { model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('401 without a key; 400 without anthropic-version, max_tokens or messages', async () => {
    expect(await post(valid, { 'anthropic-version': '2023-06-01' })).toMatchObject({ status: 401, body: { type: 'error', error: { type: 'authentication_error' } } });
    expect(await post(valid, { 'x-api-key': 'k' })).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } } });
    expect(await post({ ...valid, max_tokens: undefined })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^max_tokens/) } } });
    expect(await post({ ...valid, messages: [] })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^messages/) } } });
    expect((await post(valid)).status).toBe(200);
  });

  it('refuses what a translation from OpenAI most easily gets wrong', async () => {
    const refused = async (body: object, headers?: Record<string, string>) => (await post({ ...valid, ...body }, headers)).body.error.message;
    expect(await refused({ temperature: 1.5 })).toMatch(/^temperature/);
    expect(await refused({ temperature: 0.5 }, { 'x-api-key': 'k', 'anthropic-version': '2026-10-21' })).toBe('temperature: Extra inputs are not permitted');
    expect(await refused({ stop_sequences: ['\n'] })).toMatch(/non-whitespace/);
    expect(await refused({ messages: [{ role: 'system', content: 'x' }] })).toMatch(/role/);
    expect(await refused({ messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] })).toMatch(/must be non-empty/);
    const unanswered = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} }] },
      { role: 'user', content: 'well?' },
    ];
    expect(await refused({ messages: unanswered })).toMatch(/tool_use` ids were found without `tool_result`.*toolu_1/);
  });

  it('refuses a thinking budget below 1024 or not below max_tokens, and a temperature with thinking', async () => {
    const thinking = (budget_tokens: number, more: object = {}) => post({ ...valid, max_tokens: 4096, thinking: { type: 'enabled', budget_tokens }, ...more });
    expect(await thinking(512)).toMatchObject({ status: 400, body: { error: { type: 'invalid_request_error', message: 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024' } } });
    expect(await thinking(4096)).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^`max_tokens` must be greater than `thinking.budget_tokens`/) } } });
    expect(await thinking(3072, { temperature: 0.5 })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/^`temperature` may only be set to 1/) } } });
    expect(await thinking(3072)).toMatchObject({ status: 200, body: { content: [{ type: 'thinking' }, { type: 'text' }] } });
    expect(await thinking(3072, { temperature: 1 })).toMatchObject({ status: 200 });
  });
});
