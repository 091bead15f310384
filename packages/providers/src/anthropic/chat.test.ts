import { describe, expect, it } from 'vitest';
import { chatRequestSchema, GatewayError, UpstreamError, type ChatChunk, type ChatRequest } from '@gateway/contracts';
import { chat } from './chat.ts';
import type { AnthropicRequest } from './wire.ts';

const request = (fields: Record<string, unknown>): ChatRequest => chatRequestSchema.parse({ model: 'client-model', messages: [{ role: 'user', content: 'hi' }], ...fields });
const upstream = (fields: Record<string, unknown>, stream = false) => chat.toUpstream(request(fields), 'claude-x', stream) as AnthropicRequest;

/** What `callUpstream`'s stream loop does with each event's data: the marker ends it, the rest is mapped with one state. */
function replay(events: object[], client: ChatRequest = request({ stream: true })): { chunks: ChatChunk[]; ended: boolean } {
  const state: Record<string, unknown> = {};
  const chunks: ChatChunk[] = [];
  for (const event of events) {
    const data = JSON.stringify(event);
    if (chat.streamEnd.isMarker!(data)) return { chunks, ended: true };
    const mapped = chat.fromEvent(JSON.parse(data), client, state);
    chunks.push(...(mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]));
  }
  return { chunks, ended: false };
}

const messageStart = { type: 'message_start', message: { id: 'msg_01', type: 'message', role: 'assistant', content: [], model: 'claude-x', stop_reason: null, stop_sequence: null, usage: { input_tokens: 20, cache_creation_input_tokens: 3, cache_read_input_tokens: 7, output_tokens: 1 } } };
const textDelta = (index: number, text: string) => ({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
const toolStart = (index: number, id: string, name: string) => ({ type: 'content_block_start', index, content_block: { type: 'tool_use', id, name, input: {} } });
const jsonDelta = (index: number, partial_json: string) => ({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
const stop = (index: number) => ({ type: 'content_block_stop', index });

describe('anthropic chat: the request', () => {
  it('gathers system and developer messages into `system`, and joins same-role neighbours into one turn', () => {
    const body = upstream({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'one' },
        { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
        { role: 'user', content: [{ type: 'text', text: 'two' }, { type: 'text', text: '' }] },
        { role: 'assistant', content: 'un, deux' },
      ],
    });
    expect(body.model).toBe('claude-x');
    expect(body.system).toEqual([{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'Answer in French.' }]);
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'un, deux' }] },
    ]);
  });

  it('maps the sampling fields: max_tokens required, temperature clamped, top_p only alone, whitespace stops left out', () => {
    expect(upstream({})).toMatchObject({ max_tokens: 4096, stream: false });
    expect(upstream({ max_tokens: 50, max_completion_tokens: 70, stream: true }, true)).toMatchObject({ max_tokens: 70, stream: true });
    const body = upstream({ temperature: 1.6, top_p: 0.5, stop: ['\n', 'END'], user: 'user-7', seed: 3, logprobs: true });
    expect(body).toMatchObject({ temperature: 1, stop_sequences: ['END'], metadata: { user_id: 'user-7' } });
    expect(body).not.toHaveProperty('top_p');
    expect(body).not.toHaveProperty('seed');
    expect(body).not.toHaveProperty('logprobs');
    expect(upstream({ top_p: 0.5, stop: '\n' })).toMatchObject({ top_p: 0.5 });
    expect(upstream({ stop: '\n' })).not.toHaveProperty('stop_sequences');
  });

  it('sends tool calls as tool_use blocks and tool messages as tool_result blocks in the next user turn', () => {
    const body = upstream({
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Ro' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
        { role: 'user', content: 'and tomorrow?' },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          // Arguments cut short are no JSON object: `{}` keeps the conversation going.
          { type: 'tool_use', id: 'call_2', name: 'get_weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '24C' }] },
          { type: 'text', text: 'and tomorrow?' },
        ],
      },
    ]);
  });

  it('sends images inline as base64 and by URL as a url source, and refuses audio naming the part', () => {
    const body = upstream({
      messages: [{ role: 'user', content: [
        { type: 'text', text: 'compare' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
        { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'high' } },
      ] }],
    });
    expect(body.messages[0]!.content.slice(1)).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
    ]);
    const audio = { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] };
    expect(() => upstream({ messages: [audio] })).toThrow(expect.objectContaining({ constructor: GatewayError, status: 400, param: 'messages[0].content[0]' }));
  });

  it('maps tools and each tool_choice, with parallel_tool_calls: false as disable_parallel_tool_use', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }, { type: 'function', function: { name: 'now' } }];
    expect(upstream({ tools }).tools).toEqual([
      { name: 'get_weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(upstream({ tools })).not.toHaveProperty('tool_choice');
    expect(upstream({ tools, tool_choice: 'none' }).tool_choice).toEqual({ type: 'none' });
    expect(upstream({ tools, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    expect(upstream({ tools, tool_choice: 'required' }).tool_choice).toEqual({ type: 'any' });
    expect(upstream({ tools, tool_choice: { type: 'function', function: { name: 'now' } } }).tool_choice).toEqual({ type: 'tool', name: 'now' });
    expect(upstream({ tools, parallel_tool_calls: false }).tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(upstream({ tools, tool_choice: 'required', parallel_tool_calls: false }).tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    // No tools, no tool_choice: Anthropic refuses one without the other.
    expect(upstream({ tool_choice: 'none' })).not.toHaveProperty('tool_choice');
  });

  it('maps the legacy functions, function_call and function messages like tools, one call a turn', () => {
    const body = upstream({
      functions: [{ name: 'now', parameters: { type: 'object', properties: {} } }],
      function_call: { name: 'now' },
      messages: [
        { role: 'user', content: 'time?' },
        { role: 'assistant', content: null, function_call: { name: 'now', arguments: '{}' } },
        { role: 'function', name: 'now', content: '12:00' },
      ],
    });
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'now', disable_parallel_tool_use: true });
    const [, call, result] = body.messages;
    expect(call!.content).toEqual([{ type: 'tool_use', id: 'call_function_1', name: 'now', input: {} }]);
    expect(result!.content).toEqual([{ type: 'tool_result', tool_use_id: 'call_function_1', content: '12:00' }]);
  });

  it('asks for JSON in the system prompt, with the schema, for response_format', () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const body = upstream({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }], response_format: { type: 'json_schema', json_schema: { name: 'reply', schema } } });
    expect(body.system).toHaveLength(2);
    expect(body.system![1]!.text).toContain(JSON.stringify(schema));
    expect(upstream({ response_format: { type: 'json_object' } }).system![0]!.text).toMatch(/JSON object/);
    expect(upstream({ response_format: { type: 'text' } })).not.toHaveProperty('system');
  });

  it('refuses what Anthropic cannot give: several choices, audio output', () => {
    expect(() => upstream({ n: 2 })).toThrow(expect.objectContaining({ status: 400, param: 'n' }));
    expect(() => upstream({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'mp3' } })).toThrow(expect.objectContaining({ status: 400, param: 'modalities' }));
  });
});

describe('anthropic chat: the reply', () => {
  const reply = {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    content: [
      { type: 'thinking', thinking: 'They want weather.', signature: 'sig' },
      { type: 'text', text: 'Let me ' },
      { type: 'text', text: 'check.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 20, cache_creation_input_tokens: 3, cache_read_input_tokens: 7, output_tokens: 11 },
  };

  it("is one choice under the client's model name, with tool calls and every input token as prompt", () => {
    const response = chat.fromReply(reply, request({}));
    expect(response).toMatchObject({ id: 'chatcmpl-msg_01', object: 'chat.completion', model: 'client-model' });
    expect(response.created).toBeCloseTo(Date.now() / 1000, -1);
    expect(response.choices).toEqual([{
      index: 0,
      logprobs: null,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: 'Let me check.',
        refusal: null,
        reasoning_content: 'They want weather.',
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
    }]);
    expect(response.usage).toEqual({ prompt_tokens: 30, completion_tokens: 11, total_tokens: 41, prompt_tokens_details: { cached_tokens: 7, cache_write_tokens: 3 } });
  });

  it('maps each stop reason, and gives a legacy functions client its function_call', () => {
    const finish = (stop_reason: string) => chat.fromReply({ ...reply, content: [{ type: 'text', text: 'x' }], stop_reason }, request({})).choices[0]!.finish_reason;
    expect(['end_turn', 'stop_sequence', 'pause_turn', 'max_tokens', 'refusal'].map(finish)).toEqual(['stop', 'stop', 'stop', 'length', 'content_filter']);
    const legacy = chat.fromReply(reply, request({ functions: [{ name: 'get_weather' }] })).choices[0]!;
    expect(legacy.finish_reason).toBe('function_call');
    expect(legacy.message.function_call).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(legacy.message).not.toHaveProperty('tool_calls');
  });

  it('has null content when the reply holds no text', () => {
    const response = chat.fromReply({ ...reply, content: [reply.content[3]] }, request({}));
    expect(response.choices[0]!.message.content).toBeNull();
  });

  it('reports an error body in a 200 as the http failure its type names, and a reply without content as broken', () => {
    expect(() => chat.fromReply({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, request({}))).toThrow(
      expect.objectContaining({ constructor: UpstreamError, kind: 'http', status: 503, message: 'upstream error: Overloaded' }),
    );
    expect(() => chat.fromReply({ id: 'msg_01', type: 'message' }, request({}))).toThrow(expect.objectContaining({ kind: 'protocol' }));
  });
});

describe('anthropic chat: the stream', () => {
  /** Text, then two tool calls at once (blocks 1 and 2), then the end, as Anthropic streams them. */
  const recorded = [
    messageStart,
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'ping' },
    textDelta(0, 'Checking '),
    textDelta(0, 'both.'),
    stop(0),
    toolStart(1, 'toolu_A', 'get_weather'),
    jsonDelta(1, ''),
    jsonDelta(1, '{"city": "Pa'),
    jsonDelta(1, 'ris"}'),
    stop(1),
    toolStart(2, 'toolu_B', 'get_weather'),
    jsonDelta(2, '{"city":'),
    jsonDelta(2, ' "Rome"}'),
    stop(2),
    { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 42 } },
    { type: 'message_stop' },
  ];

  it('gives the text, each tool call under its own index, the finish reason, then the usage on a chunk of its own', () => {
    const { chunks, ended } = replay(recorded);
    expect(ended).toBe(true);
    expect(new Set(chunks.map((c) => `${c.id} ${c.created} ${c.model} ${c.object}`))).toEqual(new Set([`chatcmpl-msg_01 ${chunks[0]!.created} client-model chat.completion.chunk`]));
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta));
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking both.');

    const calls = deltas.flatMap((d) => d.tool_calls ?? []);
    expect(calls.filter((c) => c.id)).toEqual([
      { index: 0, id: 'toolu_A', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 1, id: 'toolu_B', type: 'function', function: { name: 'get_weather', arguments: '' } },
    ]);
    const argumentsOf = (index: number) => JSON.parse(calls.filter((c) => c.index === index).map((c) => c.function!.arguments).join(''));
    expect([argumentsOf(0), argumentsOf(1)]).toEqual([{ city: 'Paris' }, { city: 'Rome' }]);

    const [finish, usage] = chunks.slice(-2);
    expect(finish!.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: 'tool_calls' }]);
    expect(usage).toMatchObject({ choices: [], usage: { prompt_tokens: 30, completion_tokens: 42, total_tokens: 72, prompt_tokens_details: { cached_tokens: 7, cache_write_tokens: 3 } } });
    expect(chunks.filter((c) => c.choices[0]?.finish_reason)).toHaveLength(1);
  });

  it('takes message_delta\'s cumulative input counts over message_start\'s', () => {
    const end = { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { input_tokens: 25, output_tokens: 5 } };
    const { chunks } = replay([messageStart, end]);
    expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 35, completion_tokens: 5 });
  });

  it('gives a tool call that streamed no input `{}` as its arguments, and a legacy client function_call pieces', () => {
    const { chunks } = replay([messageStart, toolStart(0, 'toolu_A', 'now'), jsonDelta(0, ''), stop(0)]);
    expect(chunks.at(-1)!.choices[0]!.delta).toEqual({ tool_calls: [{ index: 0, function: { arguments: '{}' } }] });

    const legacy = replay([messageStart, toolStart(0, 'toolu_A', 'now'), jsonDelta(0, '{}'), stop(0)], request({ stream: true, functions: [{ name: 'now' }] }));
    expect(legacy.chunks.slice(1).map((c) => c.choices[0]!.delta)).toEqual([{ function_call: { name: 'now', arguments: '' } }, { function_call: { arguments: '{}' } }]);
  });

  it('is not complete until message_stop', () => {
    expect(replay(recorded.slice(0, -1)).ended).toBe(false);
    // The marker is read from the event's type, not from text that mentions it.
    expect(chat.streamEnd.isMarker!(JSON.stringify(textDelta(0, '{"type":"message_stop"}')))).toBe(false);
  });

  it('throws an error event as the http failure its type names, after the chunks before it', () => {
    const statusOf = (type: string) => {
      try {
        replay([messageStart, textDelta(0, 'Hel'), { type: 'error', error: { type, message: 'it failed' } }]);
      } catch (error) {
        expect(error).toMatchObject({ constructor: UpstreamError, kind: 'http', message: 'upstream error: it failed', body: { error: { type, message: 'it failed' } } });
        return (error as UpstreamError).status;
      }
      throw new Error('expected the error event to throw');
    };
    expect(['overloaded_error', 'rate_limit_error', 'api_error', 'a_type_added_later'].map(statusOf)).toEqual([503, 429, 500, 502]);
  });

  it('reports an event before message_start as broken', () => {
    expect(() => replay([textDelta(0, 'x')])).toThrow(expect.objectContaining({ kind: 'protocol' }));
  });
});

describe('anthropic chat: usage', () => {
  it('shows every count, sums too, within MAX_REQUEST_TOKENS however large the parts the upstream reports', () => {
    const reply = chat.fromReply({ type: 'message', id: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 1, cache_read_input_tokens: 1e12, cache_creation_input_tokens: 1e12, output_tokens: 2 } }, request({}));
    expect(reply.usage).toMatchObject({ prompt_tokens: 2 ** 40, total_tokens: 2 ** 40, completion_tokens: 2 });
  });
});
