/** The prompt cache's writes, carried beside the usage of the doors whose wire format has no field for them. */
import { describe, expect, it } from 'vitest';
import { cacheWritesOf } from '@gateway/contracts';
import { responsesUsageOf } from './openai-responses/from-conversation.ts';
import { usageMetadataOf } from './gemini-generate/from-conversation.ts';

describe('cache writes on the Responses and Gemini doors', () => {
  it('are carried beside the wire usage, through a spread, and never written in its JSON', () => {
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 100, cacheWriteTokens: 200 };
    const responses = responsesUsageOf(usage);
    expect(responses.input_tokens).toBe(310);
    expect(cacheWritesOf(responses)).toBe(200);
    expect(cacheWritesOf({ ...responses })).toBe(200);
    expect(JSON.parse(JSON.stringify(responses))).toEqual({ input_tokens: 310, input_tokens_details: { cached_tokens: 100 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 315 });
    const gemini = usageMetadataOf(usage)!;
    expect(cacheWritesOf(gemini)).toBe(200);
    expect(JSON.parse(JSON.stringify(gemini))).toEqual({ promptTokenCount: 310, candidatesTokenCount: 5, totalTokenCount: 315, cachedContentTokenCount: 100 });
  });

  it('are absent where the provider reported none', () => {
    expect(cacheWritesOf(responsesUsageOf({ inputTokens: 10, outputTokens: 5 }))).toBeUndefined();
    expect(cacheWritesOf(usageMetadataOf({ inputTokens: 10, outputTokens: 5 }))).toBeUndefined();
  });
});
