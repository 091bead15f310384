import { describe, expect, it } from 'vitest';
import { completionRequestSchema } from './wire/openai-completion.ts';
import { geminiGenerateRequest } from './wire/gemini-generate.ts';
import { completionWorstCase, speechWorstCase, SPEECH_MAX_OUTPUT_TOKENS } from './worst-case-usage.ts';

const completion = (body: Record<string, unknown>) => completionWorstCase(completionRequestSchema.parse({ model: 'm', ...body }));
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
