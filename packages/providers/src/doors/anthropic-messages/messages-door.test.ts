/**
 * The Messages door joined to the OpenAI provider through the conversation model, without HTTP:
 * the chat request a Messages request becomes, and the Messages reply and exact event sequence a
 * chat reply and its chunks become.
 */
import { describe, expect, it } from 'vitest';
import { GatewayError, type MessagesRequest, type MessagesStreamEvent } from '@gateway/contracts';
import { openai } from '../../openai/index.ts';

const mapping = openai.messages.mapping;
const request = (fields: Partial<MessagesRequest> = {}) => ({ model: 'claude-alias', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...fields }) as MessagesRequest;

/** A recorded chat stream replayed through the door, with its end. */
function replay(chunks: unknown[], body = request({ stream: true })): MessagesStreamEvent[] {
  const state: Record<string, unknown> = {};
  const events: MessagesStreamEvent[] = [];
  for (const chunk of chunks) {
    const mapped = mapping.fromEvent(chunk, body, state);
    events.push(...(mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]));
  }
  events.push(...mapping.finish!(body, state));
  return events;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
const usageChunk = { id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } } };

describe('a Messages request as chat completions', () => {
  it('maps system blocks, images, tool uses, tool results (errors marked) and the sampling fields; drops thinking and cache marks', () => {
    const body = mapping.toUpstream(request({
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      stop_sequences: ['END'], temperature: 0.3, top_k: 5, metadata: { user_id: 'u-1' },
      tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'not found' }], is_error: true }, { type: 'text', text: 'try again' }] },
      ],
    }), 'gpt-up', false);
    expect(body).toEqual({
      model: 'gpt-up', stream: false, max_tokens: 100, stop: ['END'], temperature: 0.3, user: 'u-1',
      tools: [{ type: 'function', function: { name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
      tool_choice: 'required', parallel_tool_calls: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'Error: not found' },
        { role: 'user', content: 'try again' },
      ],
    });
    expect(mapping.toUpstream(request({ stream: true }), 'gpt-up', true)).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('sends a system turn mid-conversation (Claude Code\'s beta) as a system message where it stood', () => {
    const body = mapping.toUpstream(request({
      thinking: { type: 'adaptive' },
      messages: [{ role: 'user', content: 'one' }, { role: 'system', content: 'Now answer in French.' }, { role: 'user', content: 'two' }],
    }), 'gpt-up', false) as { messages: unknown[] };
    expect(body.messages).toEqual([{ role: 'user', content: 'one' }, { role: 'system', content: 'Now answer in French.' }, { role: 'user', content: 'two' }]);
    const thoughtOnly = mapping.toUpstream(request({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'x' }] }, { role: 'user', content: 'b' }] }), 'gpt-up', false) as { messages: unknown[] };
    expect(thoughtOnly.messages).toEqual([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }]);
    expect(body).not.toHaveProperty('thinking');
    const unknownRole = request({ messages: [{ role: 'narrator', content: 'x' }] });
    expect(() => mapping.toUpstream(unknownRole, 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].role' }));
  });

  it('refuses, naming the block, what chat completions cannot carry', () => {
    const pdf = request({ messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBE' } }] }] });
    expect(() => mapping.toUpstream(pdf, 'gpt-up', false)).toThrow(expect.objectContaining({ constructor: GatewayError, status: 400, param: 'messages[0].content[0]' }));
    const unknown = request({ messages: [{ role: 'user', content: [{ type: 'server_tool_use', id: 'x' }] }] } as unknown as Partial<MessagesRequest>);
    expect(() => mapping.toUpstream(unknown, 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].content[0]' }));
  });
});

describe('a chat reply as a Messages reply', () => {
  it('gives thinking, text and tool_use blocks, the stop reason, and cached tokens apart from input_tokens', () => {
    const reply = mapping.fromReply({
      id: 'chatcmpl-9', choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Checking.', reasoning_content: 'Think first.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] } }],
      usage: { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } },
    }, request());
    expect(reply).toEqual({
      id: 'msg_chatcmpl-9', type: 'message', role: 'assistant', model: 'claude-alias',
      content: [{ type: 'thinking', thinking: 'Think first.', signature: '' }, { type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'x' } }],
      stop_reason: 'tool_use', stop_sequence: null,
      usage: { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 9 },
    });
    const cut = mapping.fromReply({ id: 'c', choices: [{ finish_reason: 'length', message: { content: 'x' } }] }, request());
    expect(cut.stop_reason).toBe('max_tokens');
  });
});

describe('a chat stream as Anthropic\'s events', () => {
  it('opens a block per kind of delta, in Anthropic\'s order, and ends with the usage after the stop', () => {
    const events = replay([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk,
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(events[0]).toMatchObject({ message: { id: 'msg_chatcmpl-1', model: 'claude-alias', content: [], stop_reason: null } });
    expect(events[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events[6]).toEqual({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_1', name: 'lookup', input: {} } });
    expect(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta)).toEqual([
      { type: 'text_delta', text: 'Hel' }, { type: 'text_delta', text: 'lo' },
      { type: 'input_json_delta', partial_json: '{"q":' }, { type: 'input_json_delta', partial_json: '"x"}' },
    ]);
    expect(events.at(-2)).toEqual({ type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 20, output_tokens: 9 } });
  });

  it('streams reasoning as a thinking block, and ends a stream without usage at its end all the same', () => {
    const events = replay([chunk({ reasoning_content: 'Hmm.' }), chunk({ content: 'Yes.' }), chunk({}, 'stop')]);
    expect(events.map((e) => e.type)).toEqual([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_stop',
      'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop',
    ]);
    expect(events[1]).toMatchObject({ content_block: { type: 'thinking' } });
    expect(events[3]).toMatchObject({ delta: { type: 'thinking_delta', thinking: 'Hmm.' } });
    expect(events.at(-2)).toMatchObject({ delta: { stop_reason: 'end_turn' } });
  });

  it('throws an error chunk as the upstream failure it is', () => {
    expect(() => replay([{ error: { message: 'overloaded', code: 503 } }])).toThrow(expect.objectContaining({ kind: 'http', status: 503 }));
  });
});
