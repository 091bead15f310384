/**
 * The chat completions door joined to the Gemini provider through the conversation model,
 * without HTTP: the generateContent request a chat request becomes, and the chat completion and
 * chunks a Gemini reply and its events become.
 */
import { describe, expect, it } from 'vitest';
import type { ChatChunk, ChatRequest } from '@gateway/contracts';
import { gemini } from '../../gemini/index.ts';

const mapping = gemini.chat.mapping;
const request = (fields: Partial<ChatRequest> = {}) => ({ model: 'chat-alias', messages: [{ role: 'user', content: 'hi' }], ...fields }) as ChatRequest;

function replay(events: unknown[], body = request({ stream: true })): ChatChunk[] {
  const state: Record<string, unknown> = {};
  const chunks: ChatChunk[] = [];
  for (const event of events) {
    const mapped = mapping.fromEvent(event, body, state);
    chunks.push(...(mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]));
  }
  chunks.push(...mapping.finish!(body, state));
  return chunks;
}

const usageMetadata = { promptTokenCount: 30, candidatesTokenCount: 5, thoughtsTokenCount: 4, cachedContentTokenCount: 20, totalTokenCount: 39 };

describe('a chat request as generateContent', () => {
  it('maps system and developer messages, images, tool calls and their tool messages (joined in one turn), tools, the choice and the sampling fields', () => {
    const body = mapping.toUpstream(request({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }, { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'call_a', content: 'Snow' },
        { role: 'tool', tool_call_id: 'call_b', content: 'Noon' },
        { role: 'developer', content: 'Answer in French.' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }, { type: 'function', function: { name: 'get_time' } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_completion_tokens: 80, stop: 'END', temperature: 0.5, top_p: 0.9, seed: 3, presence_penalty: 1,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' } } },
    }), 'gemini-up', false);
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Answer in French.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Weather?' }, { inlineData: { mimeType: 'image/png', data: 'iVBOR' } }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }, { functionCall: { name: 'get_time', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { content: 'Snow' } } }, { functionResponse: { name: 'get_time', response: { content: 'Noon' } } }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }, { name: 'get_time', parameters: { type: 'object', properties: {} } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: { maxOutputTokens: 80, stopSequences: ['END'], temperature: 0.5, topP: 0.9, responseMimeType: 'application/json', responseJsonSchema: { type: 'object' } },
    });
  });

  it('refuses, naming the field, what only an openai channel runs', () => {
    expect(() => mapping.toUpstream(request({ n: 2 }), 'g', false)).toThrow(expect.objectContaining({ status: 400, param: 'n' }));
    expect(() => mapping.toUpstream(request({ logprobs: true }), 'g', false)).toThrow(expect.objectContaining({ status: 400, param: 'logprobs' }));
    expect(() => mapping.toUpstream(request({ functions: [{ name: 'f' }] }), 'g', false)).toThrow(expect.objectContaining({ status: 400, param: 'functions' }));
    const audio = request({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] });
    expect(() => mapping.toUpstream(audio, 'g', false)).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].content[0]' }));
    const badArgs = request({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'not json' } }] }] });
    expect(() => mapping.toUpstream(badArgs, 'g', false)).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].tool_calls[0].function.arguments' }));
  });
});

describe('a Gemini reply as a chat completion', () => {
  it('gives content, reasoning_content and tool_calls, the finish reason, and usage with cached and reasoning tokens', () => {
    const reply = mapping.fromReply({
      responseId: 'r1', usageMetadata,
      candidates: [{ finishReason: 'STOP', content: { role: 'model', parts: [{ text: 'Hmm.', thought: true }, { text: 'Calling.' }, { functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] } }],
    }, request());
    expect(reply).toMatchObject({
      id: 'chatcmpl-r1', object: 'chat.completion', model: 'chat-alias',
      choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Calling.', reasoning_content: 'Hmm.', tool_calls: [{ id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] } }],
      usage: { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39, prompt_tokens_details: { cached_tokens: 20 }, completion_tokens_details: { reasoning_tokens: 4 } },
    });
    const cut = mapping.fromReply({ candidates: [{ finishReason: 'MAX_TOKENS', content: { parts: [{ text: 'x' }] } }] }, request());
    expect(cut.choices[0]!.finish_reason).toBe('length');
  });
});

describe('a Gemini stream as chat chunks', () => {
  it('sends the role, content and a tool call by index, then the finish chunk and the usage chunk', () => {
    const chunks = replay([
      { responseId: 'r2', candidates: [{ content: { parts: [{ text: 'Hel' }] } }] },
      { responseId: 'r2', candidates: [{ content: { parts: [{ text: 'lo' }] } }] },
      { responseId: 'r2', candidates: [{ finishReason: 'STOP', content: { parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] } }], usageMetadata },
    ]);
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? chunk.usage)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hel' },
      { content: 'lo' },
      { tool_calls: [{ index: 0, id: expect.any(String), type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] },
      {},
      { prompt_tokens: 30, completion_tokens: 9, total_tokens: 39, prompt_tokens_details: { cached_tokens: 20 }, completion_tokens_details: { reasoning_tokens: 4 } },
    ]);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls');
    expect(chunks.every((chunk) => chunk.id === 'chatcmpl-r2' && chunk.model === 'chat-alias')).toBe(true);
    expect(gemini.chat.mapping.streamEnd.isLast!(chunks.at(-2)!)).toBe(true);
  });
});
