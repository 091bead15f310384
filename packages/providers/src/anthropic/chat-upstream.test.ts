/**
 * The Anthropic provider over real HTTP against the mock Anthropic upstream, which refuses what
 * the Messages API refuses: proves the requests the mapping builds are ones Anthropic takes, and
 * that a stream's end, break and error events read as they should through `streamUpstream`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatRequestSchema, UpstreamError, type ChatChunk, type ChatRequest } from '@gateway/contracts';
import { startMockAnthropicUpstream, type MockAnthropicUpstream } from '@gateway/testkit';
import { callUpstream, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { anthropic } from './index.ts';

const request = (fields: Record<string, unknown> = {}): ChatRequest =>
  chatRequestSchema.parse({ model: 'client-model', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi.' }], ...fields });
const weatherTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } };

let mock: MockAnthropicUpstream;
let target: UpstreamTarget;

beforeAll(async () => {
  mock = await startMockAnthropicUpstream();
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  target = { channel: { base_url: `${mock.url}//` }, key: 'sk-ant-channel', upstreamModel: 'claude-upstream', timeoutMs: 2000 };
});

const drain = async (events: AsyncGenerator<ChatChunk>, seen: ChatChunk[] = []) => {
  for await (const event of events) seen.push(event);
  return seen;
};
const streamed = async (body: ChatRequest) => drain(await streamUpstream(anthropic.chat, target, body));

describe('anthropic.chat, whole', () => {
  it("sends the channel's key, version and model to /v1/messages, and answers under the client's model name", async () => {
    mock.setBehaviour({ text: 'Hi there, friend.' });
    const reply = await callUpstream(anthropic.chat, target, request({ temperature: 1.8, stop: ['\n', 'END'] }));
    expect(reply).toMatchObject({ object: 'chat.completion', model: 'client-model', choices: [{ message: { role: 'assistant', content: 'Hi there, friend.' }, finish_reason: 'stop' }] });
    // "Be brief." + "Say hi." is 16 characters: 4 tokens; the reply 17: 5.
    expect(reply.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 5, total_tokens: 9 });
    expect(mock.requests[0]).toMatchObject({
      path: '/v1/messages',
      apiKey: 'sk-ant-channel',
      anthropicVersion: '2023-06-01',
      body: { model: 'claude-upstream', max_tokens: 4096, temperature: 1, stop_sequences: ['END'], stream: false },
    });
  });

  it('reads 529 as a retryable 503 and keeps a 429\'s Retry-After, with the error in OpenAI\'s shape', async () => {
    mock.next({ status: 529 }, { status: 429, retryAfter: 7 });
    await expect(callUpstream(anthropic.chat, target, request())).rejects.toMatchObject({
      constructor: UpstreamError,
      kind: 'http',
      status: 503,
      body: { error: { type: 'overloaded_error', message: 'Overloaded', param: null, code: null } },
    });
    await expect(callUpstream(anthropic.chat, target, request())).rejects.toMatchObject({ kind: 'http', status: 429, retryAfter: 7, body: { error: { type: 'rate_limit_error' } } });
  });

  it("hands on Anthropic's refusal of a request as the 400 it is", async () => {
    // A refusal the gateway cannot foresee (the model's context is too small): no failover can help.
    mock.next({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } } });
    await expect(callUpstream(anthropic.chat, target, request())).rejects.toMatchObject({ kind: 'http', status: 400, body: { error: { message: 'prompt is too long' } } });
  });
});

describe('anthropic.chat, streamed', () => {
  it('streams a tool call the client can answer, and the answer is a conversation Anthropic takes', async () => {
    const ask = request({ stream: true, tools: [weatherTool], messages: [{ role: 'user', content: 'What is the weather in SF?' }] });
    const chunks = await streamed(ask);
    const calls = chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
    const call = { id: calls[0]!.id!, type: 'function' as const, function: { name: calls[0]!.function!.name!, arguments: calls.map((c) => c.function!.arguments).join('') } };
    expect(JSON.parse(call.function.arguments)).toEqual({ location: 'San Francisco, CA', unit: 'celsius' });
    expect(calls.filter((c) => c.function?.arguments).length).toBeGreaterThan(1);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 7 } });

    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    const answered = request({
      tools: [weatherTool],
      messages: [...ask.messages, { role: 'assistant', content, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '18C and sunny' }],
    });
    const reply = await callUpstream(anthropic.chat, target, answered);
    expect(reply.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: expect.any(String) } });
  });

  it('reports a stream that breaks before message_stop as a connection failure, after the chunks that came', async () => {
    mock.setBehaviour({ breakAfterChunks: 5, chunkDelayMs: 10 });
    const seen: ChatChunk[] = [];
    await expect(drain(await streamUpstream(anthropic.chat, target, request({ stream: true })), seen)).rejects.toMatchObject({ constructor: UpstreamError, kind: 'connection' });
    // message_start, content_block_start, ping, then two words.
    expect(seen.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Hello! This');
  });

  it('throws an error event mid-stream as the http failure it names, after the chunks that came', async () => {
    mock.setBehaviour({ streamError: { afterEvents: 5, type: 'overloaded_error' } });
    const seen: ChatChunk[] = [];
    await expect(drain(await streamUpstream(anthropic.chat, target, request({ stream: true })), seen)).rejects.toMatchObject({ kind: 'http', status: 503 });
    expect(seen.length).toBeGreaterThan(1);
  });
});
