/**
 * The Responses door joined to the Anthropic provider through the conversation model, without
 * HTTP: the Messages request a Responses request becomes, and the Responses reply and exact
 * event sequence Anthropic's reply and events become.
 */
import { describe, expect, it } from 'vitest';
import { GatewayError, type ResponsesRequest, type ResponsesStreamEvent } from '@gateway/contracts';
import { anthropic } from '../../anthropic/index.ts';
import { openai } from '../../openai/index.ts';

const mapping = anthropic.responses.mapping;
const request = (fields: Partial<ResponsesRequest> = {}) => ({ model: 'gpt-alias', input: 'hi', ...fields }) as ResponsesRequest;

function replay(events: unknown[], body = request({ stream: true })): ResponsesStreamEvent[] {
  const state: Record<string, unknown> = {};
  const out: ResponsesStreamEvent[] = [];
  for (const event of events) {
    const mapped = mapping.fromEvent(event, body, state);
    out.push(...(mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]));
  }
  out.push(...mapping.finish!(body, state));
  return out;
}

describe('a Responses request as Messages', () => {
  it('offers a namespace\'s tools one by one and leaves hosted tools out, as Codex sends them', () => {
    const body = mapping.toUpstream(request({
      tools: [
        { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } },
        { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [{ type: 'function', name: 'spawn_agent', description: 'Spawn', parameters: { type: 'object', properties: {} } }, { type: 'custom', name: 'apply_patch' }] },
        { type: 'web_search', external_web_access: true },
      ] as ResponsesRequest['tools'],
    }), 'claude-up', false) as { tools: { name: string }[] };
    expect(body.tools.map((tool) => tool.name)).toEqual(['exec_command', 'spawn_agent', 'apply_patch']);
    // Only hosted tools: none offered, so no tools at all go upstream.
    expect(mapping.toUpstream(request({ tools: [{ type: 'web_search' }] as ResponsesRequest['tools'] }), 'claude-up', false)).not.toHaveProperty('tools');
  });

  it('maps instructions and system items, messages, calls, outputs, reasoning, tools and settings by the documented rules', () => {
    const body = mapping.toUpstream(request({
      instructions: 'Be brief.', max_output_tokens: 500, temperature: 1.7, parallel_tool_calls: false, tool_choice: 'required', user: 'u-1',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' } } },
      tools: [{ type: 'function', name: 'lookup', description: 'Look up', parameters: { type: 'object', properties: { q: { type: 'string' } } } }],
      input: [
        { role: 'developer', content: 'Use tools.' },
        { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'data:image/png;base64,iVBOR' }] },
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'hmm' }], encrypted_content: 'sig_1' },
        { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'not found' },
      ],
    }), 'claude-up', false);
    expect(body).toEqual({
      model: 'claude-up', max_tokens: 500, stream: false, temperature: 1, metadata: { user_id: 'u-1' },
      system: [{ type: 'text', text: 'Be brief.' }, { type: 'text', text: 'Use tools.' }, { type: 'text', text: expect.stringContaining('"answer"') }],
      tools: [{ name: 'lookup', description: 'Look up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig_1' }, { type: 'tool_use', id: 'call_1', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'not found' }] }] },
      ],
    });
    expect(mapping.toUpstream(request({ reasoning: { effort: 'medium' }, max_output_tokens: 8000, temperature: 0.2 }), 'c', true)).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 4096 }, stream: true });
    expect(mapping.toUpstream(request({ reasoning: { effort: 'medium' }, max_output_tokens: 8000, temperature: 0.2 }), 'c', true)).not.toHaveProperty('temperature');
    // Effort names OpenAI added later: none thinks not at all, xhigh as much as high.
    expect(mapping.toUpstream(request({ reasoning: { effort: 'none' }, max_output_tokens: 20000 }), 'c', false)).not.toHaveProperty('thinking');
    expect(mapping.toUpstream(request({ reasoning: { effort: 'xhigh' }, max_output_tokens: 20000 }), 'c', false)).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 16384 } });
  });

  it('refuses, naming the item, what it cannot serve', () => {
    expect(() => mapping.toUpstream(request({ tools: [{ type: 'namespace', name: 'n', tools: [{ type: 'function' }] }] as ResponsesRequest['tools'] }), 'c', false)).toThrow(expect.objectContaining({ constructor: GatewayError, status: 400, param: 'tools[0].tools[0].name' }));
    expect(() => mapping.toUpstream(request({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }] }), 'c', false)).toThrow(expect.objectContaining({ status: 400, param: 'input[0].content[0]' }));
    expect(() => mapping.toUpstream(request({ input: [{ type: 'function_call', call_id: 'c', name: 'n', arguments: 'not json' }] }), 'c', false)).toThrow(expect.objectContaining({ status: 400, param: 'input[0].arguments' }));
  });
});

describe('a Messages reply as a Responses object', () => {
  it('gives reasoning, message and function_call items, and every prompt token (cache reads and writes) as input_tokens', () => {
    const reply = mapping.fromReply({
      id: 'msg_1', type: 'message', role: 'assistant', stop_reason: 'tool_use',
      content: [{ type: 'thinking', thinking: 'Think.', signature: 'sig' }, { type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: { q: 'x' } }],
      usage: { input_tokens: 10, cache_read_input_tokens: 20, cache_creation_input_tokens: 5, output_tokens: 9 },
    }, request());
    expect(reply).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-alias', usage: { input_tokens: 35, input_tokens_details: { cached_tokens: 20 }, output_tokens: 9, total_tokens: 44 } });
    expect(reply.output).toEqual([
      { id: expect.stringMatching(/^rs_/), type: 'reasoning', summary: [{ type: 'summary_text', text: 'Think.' }], encrypted_content: 'sig' },
      { id: expect.stringMatching(/^msg_/), type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [], logprobs: [] }] },
      { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: 'toolu_1', name: 'lookup', arguments: '{"q":"x"}' },
    ]);
    const cut = mapping.fromReply({ id: 'm', content: [{ type: 'text', text: 'x' }], stop_reason: 'max_tokens', usage: { input_tokens: 1, output_tokens: 1 } }, request());
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });
});

describe('Anthropic\'s events as the Responses stream', () => {
  const start = { type: 'message_start', message: { id: 'msg_1', usage: { input_tokens: 12, output_tokens: 1 } } };
  it('writes a reasoning item, a message and a function call in order, numbered, ending with response.completed and its usage', () => {
    const events = replay([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig_9' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"q":' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '"x"}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 20 } },
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done', 'response.reasoning_summary_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done',
      'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, at) => at));
    expect(events[7]).toMatchObject({ output_index: 0, item: { type: 'reasoning', encrypted_content: 'sig_9', summary: [{ text: 'Hmm.' }] } });
    expect(events[10]).toMatchObject({ output_index: 1, content_index: 0, delta: 'Hi' });
    expect(events[18]).toMatchObject({ output_index: 2, item: { type: 'function_call', call_id: 'toolu_1', arguments: '{"q":"x"}', status: 'completed' } });
    const completed = events.at(-1)!.response as { output: unknown[]; usage: Record<string, unknown>; status: string };
    expect(completed.output).toHaveLength(3);
    expect(completed).toMatchObject({ status: 'completed', usage: { input_tokens: 12, output_tokens: 20, total_tokens: 32 } });
  });

  it('ends a stream cut by the output limit as response.incomplete, and throws an error event as the upstream failure', () => {
    const events = replay([start, { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'a' } }, { type: 'message_delta', delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 1 } }]);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } });
    expect(() => replay([start, { type: 'error', error: { type: 'overloaded_error', message: 'busy' } }])).toThrow(expect.objectContaining({ kind: 'http' }));
  });
});

describe('a custom (freeform) tool, as Codex\'s apply_patch, through chat completions', () => {
  const chat = openai.responses.mapping;
  const patchTool = { type: 'custom', name: 'apply_patch', description: 'Edit files', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' } };
  const body = request({ tools: [patchTool], stream: true, input: [
    { role: 'user', content: 'fix it' },
    { type: 'custom_tool_call', call_id: 'call_0', name: 'apply_patch', input: '*** Begin Patch\n' },
    { type: 'custom_tool_call_output', call_id: 'call_0', output: 'Done' },
  ] } as Partial<ResponsesRequest>);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] });

  it('is a function of one string, its earlier calls and outputs replayed as tool calls and results', () => {
    const sent = chat.toUpstream(body, 'gpt-up', false) as { tools: { function: { name: string; parameters: { properties: { input: { description: string } } } } }[]; messages: unknown[] };
    expect(sent.tools[0]!.function).toMatchObject({ name: 'apply_patch', description: 'Edit files', parameters: { type: 'object', required: ['input'] } });
    expect(sent.tools[0]!.function.parameters.properties.input.description).toContain('start: "*** Begin Patch"');
    expect(sent.messages).toEqual([
      { role: 'user', content: 'fix it' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n"}' } }] },
      { role: 'tool', tool_call_id: 'call_0', content: 'Done' },
    ]);
  });

  it('comes back as a custom_tool_call with its string input, whole and streamed', () => {
    const reply = chat.fromReply({ id: 'c1', choices: [{ finish_reason: 'tool_calls', message: { content: null, tool_calls: [{ id: 'call_1', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }] } }] }, body);
    expect(reply.output).toEqual([{ id: expect.stringMatching(/^ctc_/), type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: '*** Begin Patch' }]);
    const state: Record<string, unknown> = {};
    const events: ResponsesStreamEvent[] = [];
    for (const raw of [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"input":"*** Begin' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ' Patch"}' } }] }),
      chunk({}, 'tool_calls'),
      { id: 'c1', choices: [], usage: { prompt_tokens: 5, completion_tokens: 4 } },
    ]) {
      const mapped = chat.fromEvent(raw, body, state);
      events.push(...(Array.isArray(mapped) ? mapped : mapped ? [mapped] : []));
    }
    events.push(...chat.finish!(body, state));
    expect(events.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added',
      'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events[2]).toMatchObject({ item: { type: 'custom_tool_call', status: 'in_progress', call_id: 'call_1', input: '' } });
    expect(events[4]).toMatchObject({ input: '*** Begin Patch' });
    expect(events[5]).toMatchObject({ item: { type: 'custom_tool_call', status: 'completed', input: '*** Begin Patch' } });
  });
});

describe("a call of a namespace's tool", () => {
  const chat = openai.responses.mapping;
  const body = request({
    stream: true,
    tools: [
      { type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } },
      { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents', tools: [{ type: 'function', name: 'spawn_agent', parameters: { type: 'object', properties: {} } }, { type: 'custom', name: 'run_script' }] },
    ] as ResponsesRequest['tools'],
  });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'c1', choices: [{ index: 0, delta, finish_reason: finish }] });

  it('comes back with its namespace, whole and streamed, as Codex looks its tool up by both; a tool of no namespace has none', () => {
    const reply = chat.fromReply({ id: 'c1', choices: [{ finish_reason: 'tool_calls', message: { content: null, tool_calls: [
      { id: 'call_1', function: { name: 'spawn_agent', arguments: '{}' } },
      { id: 'call_2', function: { name: 'run_script', arguments: '{"input":"ls"}' } },
      { id: 'call_3', function: { name: 'exec_command', arguments: '{}' } },
    ] } }] }, body);
    expect(reply.output).toEqual([
      { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: 'call_1', namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: '{}' },
      { id: expect.stringMatching(/^ctc_/), type: 'custom_tool_call', status: 'completed', call_id: 'call_2', namespace: 'multi_agent_v1', name: 'run_script', input: 'ls' },
      { id: expect.stringMatching(/^fc_/), type: 'function_call', status: 'completed', call_id: 'call_3', name: 'exec_command', arguments: '{}' },
    ]);
    const state: Record<string, unknown> = {};
    const events: ResponsesStreamEvent[] = [];
    for (const raw of [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'spawn_agent', arguments: '{}' } }] }),
      chunk({}, 'tool_calls'),
      { id: 'c1', choices: [], usage: { prompt_tokens: 5, completion_tokens: 4 } },
    ]) {
      const mapped = chat.fromEvent(raw, body, state);
      events.push(...(Array.isArray(mapped) ? mapped : mapped ? [mapped] : []));
    }
    events.push(...chat.finish!(body, state));
    expect(events.find((e) => e.type === 'response.output_item.added')).toMatchObject({ item: { type: 'function_call', namespace: 'multi_agent_v1', name: 'spawn_agent' } });
    expect(events.find((e) => e.type === 'response.output_item.done')).toMatchObject({ item: { type: 'function_call', namespace: 'multi_agent_v1', name: 'spawn_agent', arguments: '{}' } });
  });
});
