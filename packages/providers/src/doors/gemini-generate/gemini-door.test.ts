/**
 * Gemini's door joined to the OpenAI provider through the conversation model, without HTTP: the
 * chat request a GenerateContent request becomes, and the GenerateContentResponse and stream
 * events a chat reply and its chunks become.
 */
import { describe, expect, it } from 'vitest';
import type { GeminiChatRequest, GeminiGenerateResponse } from '@gateway/contracts';
import { anthropic } from '../../anthropic/index.ts';
import { openai } from '../../openai/index.ts';

const mapping = openai.geminiChat.mapping;
const request = (fields: Partial<GeminiChatRequest> = {}) => ({ model: 'gemini-alias', contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...fields }) as GeminiChatRequest;

function replay(chunks: unknown[], body = request()): GeminiGenerateResponse[] {
  const state: Record<string, unknown> = {};
  const events: GeminiGenerateResponse[] = [];
  for (const chunk of chunks) {
    const mapped = mapping.fromEvent(chunk, body, state);
    events.push(...(mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]));
  }
  events.push(...mapping.finish!(body, state));
  return events;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
const partsOf = (event: GeminiGenerateResponse) => event.candidates![0]!.content!.parts;

describe('a GenerateContent request as chat completions', () => {
  it('maps the system instruction, OpenAPI tool schemas, the calling mode, generation settings, and pairs function responses with their calls by name', () => {
    const body = mapping.toUpstream(request({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING', nullable: true } }, required: ['city'], propertyOrdering: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: { maxOutputTokens: 50, temperature: 0.3, stopSequences: ['END'], responseMimeType: 'application/json', responseJsonSchema: { type: 'object' }, seed: 4 },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      contents: [
        { role: 'user', parts: [{ text: 'Weather?' }, { inlineData: { mimeType: 'image/png', data: 'iVBOR' } }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }, { functionCall: { name: 'get_weather', args: { city: 'Rome' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'Snow' } } }, { functionResponse: { name: 'get_weather', response: { error: 'unknown city' } } }] },
      ],
    }), 'gpt-up', false) as Record<string, any>;
    expect(body).toMatchObject({
      model: 'gpt-up', max_tokens: 50, temperature: 0.3, stop: ['END'],
      response_format: { type: 'json_schema' },
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: ['string', 'null'] } }, required: ['city'] } } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    expect(body).not.toHaveProperty('seed');
    const [oslo, rome] = body.messages[2].tool_calls.map((call: { id: string }) => call.id);
    expect(oslo).not.toBe(rome);
    expect(body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBOR' } }] },
      { role: 'assistant', content: null, tool_calls: [
        { id: oslo, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        { id: rome, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
      ] },
      { role: 'tool', tool_call_id: oslo, content: 'Snow' },
      { role: 'tool', tool_call_id: rome, content: 'Error: unknown city' },
    ]);
  });

  it('refuses, naming the field, what only Gemini runs', () => {
    expect(() => mapping.toUpstream(request({ generationConfig: { candidateCount: 2 } }), 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'generationConfig.candidateCount' }));
    expect(() => mapping.toUpstream(request({ tools: [{ codeExecution: {} }] }), 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'tools[0].codeExecution' }));
    const code = request({ contents: [{ role: 'model', parts: [{ executableCode: { code: 'print(1)' } }] }] });
    expect(() => mapping.toUpstream(code, 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'contents[0].parts[0]' }));
    expect(() => mapping.toUpstream(request({ contents: [{ role: 'narrator', parts: [{ text: 'x' }] }] }), 'gpt-up', false)).toThrow(expect.objectContaining({ status: 400, param: 'contents[0].role' }));
  });
});

describe('a GenerateContent request as Messages', () => {
  it('joins a streamed thought sent back (its pieces, then its signature) into one signed thinking block, and asks for thinking with its budget', () => {
    const body = anthropic.geminiChat.mapping.toUpstream(request({
      generationConfig: { maxOutputTokens: 4000, thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } },
      contents: [
        { role: 'user', parts: [{ text: 'Think.' }] },
        { role: 'model', parts: [{ text: 'The user ', thought: true }, { text: 'asked.', thought: true }, { text: '', thought: true, thoughtSignature: 'sig_1' }, { text: 'Done.' }] },
        { role: 'user', parts: [{ text: 'Again.' }] },
      ],
    }), 'claude-up', false) as Record<string, any>;
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'thinking', thinking: 'The user asked.', signature: 'sig_1' }, { type: 'text', text: 'Done.' }] });
  });
});

describe('a chat reply as a GenerateContentResponse', () => {
  it('gives thought, text and functionCall parts, the finish reason, and usage with cached and thought tokens in Gemini\'s fields', () => {
    const reply = mapping.fromReply({
      id: 'chatcmpl-9', choices: [{ index: 0, finish_reason: 'tool_calls', message: { role: 'assistant', content: 'Checking.', reasoning_content: 'Think first.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] } }],
      usage: { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 }, completion_tokens_details: { reasoning_tokens: 4 } },
    }, request());
    expect(reply).toEqual({
      candidates: [{ index: 0, finishReason: 'STOP', content: { role: 'model', parts: [{ text: 'Think first.', thought: true }, { text: 'Checking.' }, { functionCall: { id: 'call_1', name: 'lookup', args: { q: 'x' } } }] } }],
      usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 5, thoughtsTokenCount: 4, cachedContentTokenCount: 20, totalTokenCount: 39 },
      modelVersion: 'gemini-alias', responseId: 'chatcmpl-9',
    });
    const cut = mapping.fromReply({ id: 'c', choices: [{ finish_reason: 'length', message: { content: 'x' } }] }, request());
    expect(cut.candidates![0]!.finishReason).toBe('MAX_TOKENS');
    // No usage reported: none given, so the worker estimates rather than charge 0.
    expect(cut.usageMetadata).toBeUndefined();
  });
});

describe('a chat stream as Gemini\'s events', () => {
  it('sends text as it comes, a function call whole once its arguments are complete, and ends with finishReason and usage', () => {
    const events = replay([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] }),
      chunk({}, 'tool_calls'),
      { id: 'chatcmpl-1', choices: [], usage: { prompt_tokens: 30, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } } },
    ]);
    expect(events.map(partsOf)).toEqual([[{ text: 'Hel' }], [{ text: 'lo' }], [{ functionCall: { id: 'call_1', name: 'lookup', args: { q: 'x' } } }]]);
    expect(events.slice(0, -1).every((event) => !event.candidates![0]!.finishReason && !event.usageMetadata)).toBe(true);
    expect(events.at(-1)).toMatchObject({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 30, candidatesTokenCount: 9, cachedContentTokenCount: 20, totalTokenCount: 39 }, modelVersion: 'gemini-alias', responseId: 'chatcmpl-1' });
  });

  it('streams reasoning as thought parts, and ends a stream without usage at its end, without usageMetadata', () => {
    const events = replay([chunk({ reasoning_content: 'Hmm.' }), chunk({ content: 'Yes.' }), chunk({}, 'length')]);
    expect(events.map(partsOf)).toEqual([[{ text: 'Hmm.', thought: true }], [{ text: 'Yes.' }], [{ text: '' }]]);
    expect(events.at(-1)!.candidates![0]!.finishReason).toBe('MAX_TOKENS');
    expect(events.at(-1)!.usageMetadata).toBeUndefined();
  });
});
