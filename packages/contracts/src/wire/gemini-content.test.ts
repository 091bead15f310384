import { describe, expect, it } from 'vitest';
import { CHAT_DEFAULT_MAX_TOKENS, NON_TEXT_PART_TOKENS } from '../worst-case-usage.ts';
import { geminiChatWorstCase, geminiEmbedWorstCase } from '../gemini-worst-case.ts';
import { asksForSpeech, geminiBatchEmbedRequest, geminiChatRequest, geminiEmbedContentRequest } from './gemini-content.ts';

const issueOf = (result: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string; code: string }[] } }) => result.error?.issues[0];

describe('which generateContent body is speech', () => {
  it('is one asking for AUDIO or giving a speechConfig, in either spelling; any other is a chat', () => {
    expect(asksForSpeech({ generationConfig: { responseModalities: ['AUDIO'] } })).toBe(true);
    expect(asksForSpeech({ generation_config: { response_modalities: ['audio'] } })).toBe(true);
    expect(asksForSpeech({ generationConfig: { speechConfig: {} } })).toBe(true);
    expect(asksForSpeech({ generationConfig: { responseModalities: ['TEXT'] } })).toBe(false);
    expect(asksForSpeech({ contents: [] })).toBe(false);
    expect(asksForSpeech(null)).toBe(false);
  });
});

describe('the chat request', () => {
  it('takes what @google/genai sends, snake_case renamed, free-form values kept', () => {
    const parsed = geminiChatRequest.parse({
      contents: [
        { role: 'user', parts: [{ text: 'hi' }, { inline_data: { mime_type: 'image/png', data: 'AAAA' } }] },
        { role: 'model', parts: [{ function_call: { name: 'f', args: { snake_arg: 1 } }, thought_signature: 'sig' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'f', response: { ok: true } } }] },
      ],
      system_instruction: { parts: [{ text: 'Be brief.' }] },
      tools: [{ function_declarations: [{ name: 'f', parameters_json_schema: { type: 'object' } }] }],
      generation_config: { max_output_tokens: 10, thinking_config: { include_thoughts: true }, response_mime_type: 'application/json' },
    });
    expect(parsed.contents[1]!.parts[0]).toEqual({ functionCall: { name: 'f', args: { snake_arg: 1 } }, thoughtSignature: 'sig' });
    expect(parsed.contents[0]!.parts[1]!.inlineData).toEqual({ mimeType: 'image/png', data: 'AAAA' });
    expect(parsed.generationConfig).toEqual({ maxOutputTokens: 10, thinkingConfig: { includeThoughts: true }, responseMimeType: 'application/json' });
    expect(parsed.tools![0]!.functionDeclarations![0]).toEqual({ name: 'f', parametersJsonSchema: { type: 'object' } });
  });

  it("refuses what reaches the channel's project or costs past the quota, and unknown fields, naming them", () => {
    const text = { contents: [{ parts: [{ text: 'hi' }] }] };
    expect(issueOf(geminiChatRequest.safeParse({ contents: [{ parts: [{ fileData: { fileUri: 'files/x' } }] }] }))).toMatchObject({ path: ['contents', 0, 'parts', 0, 'fileData'], message: expect.stringMatching(/not served/) });
    expect(issueOf(geminiChatRequest.safeParse({ ...text, tools: [{ googleSearch: {} }] }))).toMatchObject({ path: ['tools', 0, 'googleSearch'] });
    expect(issueOf(geminiChatRequest.safeParse({ ...text, cachedContent: 'cachedContents/1' }))).toMatchObject({ path: ['cachedContent'] });
    expect(issueOf(geminiChatRequest.safeParse({ ...text, temprature: 1 }))).toMatchObject({ code: 'unrecognized_keys' });
    expect(issueOf(geminiChatRequest.safeParse({ contents: [{ parts: [{}] }] }))).toMatchObject({ message: expect.stringMatching(/must hold text/) });
    expect(geminiChatRequest.safeParse({ ...text, tools: [{ codeExecution: {} }] }).success).toBe(true);
  });
});

describe('what a Gemini request holds', () => {
  it('the prompt by its bytes, an image a flat count, and the output and thinking budget per candidate', () => {
    const prompt = JSON.stringify({ text: 'hello' }).length;
    const plain = geminiChatRequest.parse({ contents: [{ parts: [{ text: 'hello' }] }] });
    expect(geminiChatWorstCase(plain)).toBe(prompt + CHAT_DEFAULT_MAX_TOKENS);
    const limited = geminiChatRequest.parse({
      contents: [{ parts: [{ text: 'hello' }, { inlineData: { mimeType: 'image/jpeg', data: 'x'.repeat(800_000) } }] }],
      generationConfig: { maxOutputTokens: 100, candidateCount: 2, thinkingConfig: { thinkingBudget: 50 } },
    });
    expect(geminiChatWorstCase(limited)).toBe(prompt + NON_TEXT_PART_TOKENS + (100 + 50) * 2);
  });

  it('an embedding its texts by their bytes', () => {
    expect(geminiEmbedWorstCase(geminiBatchEmbedRequest.parse({ requests: [{ content: { parts: [{ text: 'héllo' }] } }, { content: { parts: [{ text: 'ab' }] } }] }))).toBe(6 + 2);
    expect(geminiEmbedContentRequest.parse({ content: { parts: [{ text: 'x' }] }, task_type: 'RETRIEVAL_QUERY' })).toMatchObject({ taskType: 'RETRIEVAL_QUERY' });
    expect(geminiBatchEmbedRequest.safeParse({ requests: Array.from({ length: 101 }, () => ({ content: { parts: [{ text: 'x' }] } })) }).success).toBe(false);
  });
});
