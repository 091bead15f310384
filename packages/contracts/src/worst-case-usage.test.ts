import { describe, expect, it } from 'vitest';
import { completionRequestSchema } from './wire/openai-completion.ts';
import { geminiGenerateRequest } from './wire/gemini-generate.ts';
import { chatRequestSchema } from './wire/openai-chat.ts';
import { chatPromptTokens, chatWorstCase, completionWorstCase, estimateTokens, NON_TEXT_PART_ESTIMATE, speechWorstCase, SPEECH_MAX_OUTPUT_TOKENS, tokensAtMost } from './worst-case-usage.ts';

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

  it('holds the largest output length the request names, under any name a server may read (both go upstream as they came)', () => {
    const base = chat({ messages: [asked], max_completion_tokens: 1 });
    expect(chat({ messages: [asked], max_completion_tokens: 1, max_tokens: 3000 }) - base).toBe(2999);
    expect(chat({ messages: [asked], max_completion_tokens: 3000, max_tokens: 1 }) - base).toBe(2999);
    // llama.cpp reads n_predict before max_tokens; Ollama num_predict, in options too. (The
    // alias's own few bytes count as prompt, as any field passed through does.)
    expect(chat({ messages: [asked], n_predict: 3000 }) - base).toBeGreaterThanOrEqual(2999);
    expect(chat({ messages: [asked], options: { num_predict: 3000 } }) - base).toBeGreaterThanOrEqual(2999);
    expect(completion({ prompt: 'hi', max_tokens: 1, n_predict: 3000 })).toBe(2 + 3000);
    expect(completion({ prompt: 'hi', parameters: { max_new_tokens: 500 }, n: 2 })).toBe(2 + 1000);
    // Without any, a completion is held for the 16 it is sent.
    expect(completion({ prompt: 'hi' })).toBe(2 + 16);
    // A body no schema checked (a batch line stored before the check): a length that is no
    // number is not counted, never a hold of NaN (which Redis took as 0).
    expect(completionWorstCase({ model: 'm', prompt: 'hi', options: { num_predict: 'x' } } as never)).toBe(2 + 16);
  });

  it('estimates a charge by the same parts as the hold: tools at a quarter of their text, an image at a typical count, not the hold\'s worst', () => {
    const tool = { type: 'function', function: { name: 'f', description: long, parameters: { type: 'object' } } };
    const withTools = chatRequestSchema.parse({ model: 'm', messages: [asked], tools: [tool] });
    const plain = chatRequestSchema.parse({ model: 'm', messages: [asked] });
    expect(chatPromptTokens(withTools) - chatPromptTokens(plain)).toBeGreaterThanOrEqual(long.length / 4);
    const image = chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] });
    const noPart = chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [] }] });
    expect(chatPromptTokens(image) - chatPromptTokens(noPart)).toBe(NON_TEXT_PART_ESTIMATE);
  });

  it('holds a part that is no text by its kind: a file by its bytes, a sound by its length, an image flat, and every other byte of it, at least a flat count', () => {
    const data = `data:application/pdf;base64,${'QUJD'.repeat(50_000)}`;
    const held = (part: unknown) => chatWorstCase(chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [part] }], max_tokens: 1 }))
      - chatWorstCase(chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [] }], max_tokens: 1 }));
    // A 200 KB file held at least its bytes (it was held 2,000, and 21 with a text beside it).
    expect(held({ type: 'file', file: { file_data: data } })).toBeGreaterThanOrEqual(data.length);
    expect(held({ type: 'file', file: { file_data: data }, text: '.' })).toBeGreaterThanOrEqual(data.length);
    // A sound by its length (a token every 32 characters of its base64), a small one at the flat count.
    const sound = held({ type: 'input_audio', input_audio: { data: 'A'.repeat(320_000), format: 'wav' } });
    expect(sound).toBeGreaterThanOrEqual(10_000);
    expect(sound).toBeLessThan(10_100);
    expect(held({ type: 'input_audio', input_audio: { data: 'A'.repeat(3200), format: 'wav' } })).toBe(2000);
    // An image, inline or by address, at the flat count, however large its bytes: an upstream bills it by its pixels.
    expect(held({ type: 'image_url', image_url: { url: `data:image/jpeg;base64,${'/9j/'.repeat(200_000)}` } })).toBe(2000);
    expect(held({ type: 'image_url', image_url: { url: 'https://x/y.png' } })).toBe(2000);
    // ...but not a text beside it, nor data that is no image in its place.
    expect(held({ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' }, text: 'x'.repeat(50_000) })).toBeGreaterThanOrEqual(50_000);
    expect(held({ type: 'image_url', image_url: { url: data } })).toBeGreaterThanOrEqual(data.length);
    // A text part by its bytes.
    expect(held({ type: 'text', text: 'x'.repeat(5000) })).toBeGreaterThanOrEqual(5000);
    expect(held({ type: 'text', text: 'hi' })).toBeLessThan(100);
    // Estimated (a charge with no usage reported), a file is the typical count, not its bytes.
    const estimated = chatPromptTokens(chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [{ type: 'file', file: { file_data: data }, text: '.' }] }] }))
      - chatPromptTokens(chatRequestSchema.parse({ model: 'm', messages: [{ role: 'user', content: [] }] }));
    expect(estimated).toBe(NON_TEXT_PART_ESTIMATE);
  });

  it('holds the output of every choice', () => {
    expect(chat({ messages: [asked], max_completion_tokens: 100, n: 3 }) - chat({ messages: [asked], max_completion_tokens: 100 })).toBe(200);
  });
});

describe('estimateTokens', () => {
  // A real tokenizer as the reference (js-tiktoken, which the LangChain test dependency brings).
  const tokenizers = ['cl100k_base', 'o200k_base'] as const;
  const scripts: Record<string, string> = {
    english: 'The quick brown fox jumps over the lazy dog. ',
    chinese: '人工智能模型网关将请求路由到上游提供者并计算使用量',
    japanese: 'これは日本語のテスト文です。ゲートウェイは使用量を数えます。',
    korean: '이것은 한국어 테스트 문장입니다 게이트웨이는 사용량을 계산합니다',
    emoji: '😀🎉🚀🌍🔥💡🎵🐍🍕⚡',
    'emoji sequences': '👨‍👩‍👧‍👦🏳️‍🌈👩🏽‍💻',
    'rare CJK': '𠀀𠀁𠀂𠀃𠀄𠀅𠀆𠀇𠀈𠀉',
    cyrillic: 'Быстрая коричневая лиса прыгает через ленивую собаку. ',
    arabic: 'الثعلب البني السريع يقفز فوق الكلب الكسول ',
    hindi: 'तेज भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है ',
    thai: 'สุนัขจิ้งจอกสีน้ำตาลกระโดดข้ามสุนัขขี้เกียจ',
    accented: 'Ça déçoit énormément: où êtes-vous, garçon? Über größe. ',
    math: '∑∫∂√∞≈≠≤≥∀∃∈∉⊂⊃∪∩',
  };

  it('charges no script less than a real tokenizer counts it', async () => {
    const { getEncoding } = await import('js-tiktoken');
    for (const name of tokenizers) {
      const encoding = getEncoding(name);
      for (const [script, text] of Object.entries(scripts)) {
        const sample = text.repeat(5);
        expect(estimateTokens(sample), `${script} in ${name}`).toBeGreaterThanOrEqual(encoding.encode(sample).length);
      }
    }
  });

  it('charges 100 CJK characters and 50 emoji more than 25 tokens, and English four characters a token', () => {
    expect(estimateTokens('漢'.repeat(100))).toBe(225);
    expect(estimateTokens('😀'.repeat(50))).toBe(150);
    expect(estimateTokens('abcd'.repeat(25))).toBe(25);
    // Never more than the hold, which counts a token a byte.
    for (const text of Object.values(scripts)) expect(estimateTokens(text)).toBeLessThanOrEqual(tokensAtMost(text));
  });
});
