import { describe, expect, it } from 'vitest';
import { completionRequestSchema } from './wire/openai-completion.ts';
import { geminiGenerateRequest } from './wire/gemini-generate.ts';
import { chatRequestSchema } from './wire/openai-chat.ts';
import { chatPromptTokens, chatWorstCase, completionWorstCase, speechWorstCase, SPEECH_MAX_OUTPUT_TOKENS, tokensAtMost } from './worst-case-usage.ts';

const completion = (body: Record<string, unknown>) => completionWorstCase(completionRequestSchema.parse({ model: 'm', ...body }));
const chat = (body: Record<string, unknown>) => chatWorstCase(chatRequestSchema.parse({ model: 'm', max_completion_tokens: 1, ...body }));
const speech = (body: Record<string, unknown>, config: Record<string, unknown> = {}) => speechWorstCase(geminiGenerateRequest.parse({
  contents: [{ parts: [{ text: 'hello' }] }],
  generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } }, ...config },
  ...body,
}));

describe('completionWorstCase', () => {
  it('counts max_tokens for every completion of every prompt of a batch', () => {
    expect(completion({ prompt: 'hi', max_tokens: 10, n: 2 })).toBe(2 + 20);
    expect(completion({ prompt: ['hi', 'hi', 'hi'], max_tokens: 10, n: 2 })).toBe(6 + 60);
    expect(completion({ prompt: [[1, 2], [3]], max_tokens: 10, best_of: 3 })).toBe(3 + 60);
    // One prompt of token ids.
    expect(completion({ prompt: [1, 2, 3], max_tokens: 10 })).toBe(3 + 10);
  });

  it('counts a token a UTF-8 byte (a prompt of rare characters makes more tokens than characters), and the suffix', () => {
    expect(completion({ prompt: '漢字', max_tokens: 0 })).toBe(6);
    expect(completion({ prompt: '😀', max_tokens: 0 })).toBe(4);
    expect(completion({ prompt: ['a', 'b'], suffix: 'xyz', max_tokens: 0 })).toBe(2 + 6);
  });
});

describe('speechWorstCase', () => {
  it('counts the output of every candidate, and the system instruction and tools as prompt', () => {
    expect(speech({})).toBe(5 + SPEECH_MAX_OUTPUT_TOKENS);
    expect(speech({}, { candidateCount: 4, maxOutputTokens: 100 })).toBe(5 + 400);
    const instruction = 'x'.repeat(10_000);
    expect(speech({ systemInstruction: { parts: [{ text: instruction }] } }, { maxOutputTokens: 100 })).toBeGreaterThan(10_000 + 100);
  });
});

describe('chatWorstCase', () => {
  const long = 'x '.repeat(50_000);
  const asked = { role: 'user', content: 'call it' };

  it('counts the text an assistant message carries anywhere, not only in its content', () => {
    const inContent = chat({ messages: [asked, { role: 'assistant', content: long }] });
    expect(inContent).toBeGreaterThan(100_000);
    // The same text as a function call's arguments, a tool call's, a refusal, or a field passed through.
    for (const assistant of [
      { role: 'assistant', content: null, function_call: { name: 'f', arguments: long } },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: long } }] },
      { role: 'assistant', content: null, refusal: long },
      { role: 'assistant', content: null, reasoning_content: long },
    ]) {
      expect(chat({ messages: [asked, assistant] }), JSON.stringify(Object.keys(assistant))).toBeGreaterThanOrEqual(100_000);
    }
  });

  it('counts tools, functions, response_format, a prediction and fields passed through as prompt, but not the settings', () => {
    const base = chat({ messages: [asked] });
    const tool = { type: 'function', function: { name: 'f', description: long, parameters: { type: 'object' } } };
    expect(chat({ messages: [asked], tools: [tool] }) - base).toBeGreaterThan(100_000);
    expect(chat({ messages: [asked], prediction: { type: 'content', content: long } }) - base).toBeGreaterThan(100_000);
    expect(chat({ messages: [asked], unknown_field: long }) - base).toBeGreaterThan(100_000);
    // A full logit_bias and metadata are settings: they hold nothing more.
    const logit_bias = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [String(i), 1]));
    expect(chat({ messages: [asked], logit_bias, metadata: { a: 'b'.repeat(512) }, user: 'u', seed: 1 })).toBe(base);
  });

  it('holds the larger of max_tokens and max_completion_tokens when both are set (both go upstream, and a server may read either)', () => {
    const base = chat({ messages: [asked], max_completion_tokens: 1 });
    expect(chat({ messages: [asked], max_completion_tokens: 1, max_tokens: 3000 }) - base).toBe(2999);
    expect(chat({ messages: [asked], max_completion_tokens: 3000, max_tokens: 1 }) - base).toBe(2999);
  });

  it('counts the same prompt by the estimate\'s rule for the charge, a quarter of the text and every field the hold counts', () => {
    const tool = { type: 'function', function: { name: 'f', description: long, parameters: { type: 'object' } } };
    const request = chatRequestSchema.parse({ model: 'm', messages: [asked], tools: [tool] });
    expect(chatPromptTokens(request)).toBeGreaterThanOrEqual(long.length / 4);
    expect(chatPromptTokens(request)).toBeLessThanOrEqual(chatPromptTokens(request, tokensAtMost));
  });

  it('holds the output of every choice', () => {
    expect(chat({ messages: [asked], max_completion_tokens: 100, n: 3 }) - chat({ messages: [asked], max_completion_tokens: 100 })).toBe(200);
  });
});
