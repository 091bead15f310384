/** The Messages door on a Gemini upstream, without HTTP: the request it sends, and the reply and stream it reads back. */
import { describe, expect, it } from 'vitest';
import type { MessagesRequest, MessagesStreamEvent } from '@gateway/contracts';
import { gemini } from './index.ts';

const mapping = gemini.messages.mapping;
const request = (fields: Partial<MessagesRequest> = {}) => ({ model: 'alias', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }], ...fields }) as MessagesRequest;

describe('a Messages request as generateContent', () => {
  it('joins system turns into the system instruction and names each function response by its call', () => {
    const body = mapping.toUpstream(request({
      system: 'Be brief.', top_k: 3, thinking: { type: 'enabled', budget_tokens: 512 }, tool_choice: { type: 'tool', name: 'lookup' },
      tools: [{ name: 'lookup', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'find x' },
        { role: 'system', content: 'Answer in French.' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, { type: 'tool_use', id: 'toolu_9', name: 'lookup', input: { q: 'x' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'none', is_error: true }] },
      ],
    }), 'gemini-up', false);
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Answer in French.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'find x' }] },
        { role: 'model', parts: [{ functionCall: { name: 'lookup', args: { q: 'x' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { error: 'none' } } }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'lookup', parameters: { type: 'object' } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['lookup'] } },
      generationConfig: { maxOutputTokens: 50, topK: 3, thinkingConfig: { includeThoughts: true, thinkingBudget: 512 } },
    });
  });

  it('refuses media by URL, which as fileData may name a file of the channel\'s project', () => {
    const byUrl = request({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://generativelanguage.googleapis.com/v1beta/files/abc' } }] }] });
    expect(() => mapping.toUpstream(byUrl, 'gemini-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'messages[0].content[0]' }));
    const inline = request({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBOR' } }] }] });
    expect(mapping.toUpstream(inline, 'gemini-up', false)).toMatchObject({ contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBOR' } }] }] });
  });
});

describe('a Gemini reply and stream as Messages', () => {
  const usageMetadata = { promptTokenCount: 40, candidatesTokenCount: 5, cachedContentTokenCount: 30, thoughtsTokenCount: 7 };

  it('reads thoughts as thinking, calls as tool_use, cached tokens as cache reads and thoughts as output', () => {
    const reply = mapping.fromReply({
      responseId: 'r1', usageMetadata,
      candidates: [{ finishReason: 'STOP', content: { parts: [{ text: 'Let me see.', thought: true }, { functionCall: { name: 'lookup', args: { q: 'x' } } }] } }],
    }, request());
    expect(reply).toMatchObject({
      content: [{ type: 'thinking', thinking: 'Let me see.', signature: '' }, { type: 'tool_use', id: 'toolu_r1_0', name: 'lookup', input: { q: 'x' } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 10, cache_read_input_tokens: 30, output_tokens: 12 },
    });
  });

  it('ends the stream at the event with the finishReason, message_stop its last event', () => {
    const state: Record<string, unknown> = {};
    const events: MessagesStreamEvent[] = [];
    for (const raw of [
      { responseId: 'r2', candidates: [{ content: { parts: [{ text: 'Hel' }] } }] },
      { responseId: 'r2', candidates: [{ content: { parts: [{ text: 'lo' }] }, finishReason: 'MAX_TOKENS' }], usageMetadata },
    ]) {
      const mapped = mapping.fromEvent(raw, request({ stream: true }), state);
      events.push(...(Array.isArray(mapped) ? mapped : mapped ? [mapped] : []));
    }
    expect(events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(events.filter((e) => mapping.streamEnd.isLast!(e))).toEqual([{ type: 'message_stop' }]);
    expect(events.at(-2)).toMatchObject({ delta: { stop_reason: 'max_tokens' } });
  });
});
