/**
 * Google's own SDK against the mock: proves the mock speaks the wire format real Gemini clients
 * expect, so tests built on it (and on the gateway relaying it) mean something.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, GoogleGenAI, Type } from '@google/genai';
import { geminiChatRequest, geminiGenerateRequest } from '@gateway/contracts';
import { startMockGeminiUpstream, mockSpeech, type MockGeminiUpstream } from './mock-gemini-upstream.ts';
import { twoSpeakers } from './speech-samples.ts';
import { MOCK_THOUGHT } from './mock-gemini-text.ts';

const MODEL = 'gemini-2.5-flash-preview-tts';
let mock: MockGeminiUpstream;
let ai: GoogleGenAI;

beforeAll(async () => {
  mock = await startMockGeminiUpstream();
  ai = new GoogleGenAI({ apiKey: mock.apiKey, httpOptions: { baseUrl: mock.url } });
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

describe('@google/genai against the mock Gemini upstream', () => {
  it('generateContent with one voice', async () => {
    const text = 'Say cheerfully: Have a wonderful day!';
    const response = await ai.models.generateContent({
      model: MODEL,
      contents: [{ parts: [{ text }] }],
      config: {
        responseModalities: ['AUDIO'],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } },
        temperature: 1,
        systemInstruction: 'Speak warmly.',
      },
    });
    const part = response.candidates?.[0]?.content?.parts?.[0];
    expect(part?.inlineData?.mimeType).toBe('audio/L16;codec=pcm;rate=24000');
    expect(Buffer.from(part!.inlineData!.data!, 'base64').length).toBe(mockSpeech(text).pcmBytes);
    expect(response.usageMetadata?.totalTokenCount).toBeGreaterThan(0);
    expect(response.candidates?.[0]?.finishReason).toBe('STOP');

    // What the SDK put on the wire is a request the gateway's schema accepts as it is.
    expect(mock.received[0]).toMatchObject({ model: MODEL, method: 'generateContent', apiKey: mock.apiKey });
    const sent = mock.received[0]!.body as Record<string, unknown>;
    expect(sent).toHaveProperty('systemInstruction');
    expect(geminiGenerateRequest.parse(sent)).toEqual(sent);
  });

  it('generateContent with two speakers and a language', async () => {
    const { text, speechConfig } = twoSpeakers;
    const response = await ai.models.generateContent({ model: MODEL, contents: text, config: { responseModalities: ['AUDIO'], speechConfig } });
    expect(Buffer.from(response.data!, 'base64').length).toBe(mockSpeech(text).pcmBytes);
  });

  it('generateContentStream', async () => {
    mock.set({ streamChunkMs: 250 });
    const text = 'x'.repeat(30); // 1,500 ms → 6 events
    const stream = await ai.models.generateContentStream({
      model: MODEL,
      contents: text,
      config: { responseModalities: ['AUDIO'], speechConfig: 'Zephyr' },
    });
    const pieces: Buffer[] = [];
    let last;
    for await (const chunk of stream) {
      pieces.push(Buffer.from(chunk.candidates![0]!.content!.parts![0]!.inlineData!.data!, 'base64'));
      last = chunk;
    }
    expect(pieces).toHaveLength(6);
    expect(Buffer.concat(pieces).length).toBe(mockSpeech(text).pcmBytes);
    expect(last?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(last?.usageMetadata?.candidatesTokenCount).toBe(38);
    expect(mock.received[0]?.method).toBe('streamGenerateContent');
  });

  it('surfaces mock errors as the SDK ApiError with the HTTP status', async () => {
    mock.failNext(1, 429);
    const error = await ai.models
      .generateContent({ model: MODEL, contents: 'hi', config: { responseModalities: ['AUDIO'], speechConfig: 'Kore' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(429);
    expect((error as ApiError).message).toContain('RESOURCE_EXHAUSTED');

    const stranger = new GoogleGenAI({ apiKey: 'wrong', httpOptions: { baseUrl: mock.url } });
    const denied = await stranger.models
      .generateContent({ model: MODEL, contents: 'hi', config: { responseModalities: ['AUDIO'], speechConfig: 'Kore' } })
      .catch((e: unknown) => e);
    expect((denied as ApiError).status).toBe(403);
  });
});

describe('@google/genai against the mock Gemini text and embedding models', () => {
  const CHAT = 'gemini-2.5-flash';
  const weather = { name: 'get_weather', description: 'The weather in a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

  it('answers text with usage, and thoughts when asked, whole and streamed', async () => {
    const reply = await ai.models.generateContent({ model: CHAT, contents: 'Say hi', config: { systemInstruction: 'Be brief.' } });
    expect(reply.text).toBe('Echo: Say hi');
    expect(reply.usageMetadata).toMatchObject({ promptTokenCount: 4, candidatesTokenCount: 3, totalTokenCount: 7 });
    expect(mock.received[0]).toMatchObject({ model: CHAT, method: 'generateContent' });
    expect(geminiChatRequest.parse(mock.received[0]!.body)).toEqual(mock.received[0]!.body);

    mock.set({ cachedTokens: 2 });
    const thinking = await ai.models.generateContent({ model: CHAT, contents: 'Say hi', config: { thinkingConfig: { includeThoughts: true } } });
    expect(thinking.candidates![0]!.content!.parts![0]).toEqual({ text: MOCK_THOUGHT, thought: true });
    expect(thinking.text).toBe('Echo: Say hi');
    const thoughts = Math.ceil(MOCK_THOUGHT.length / 4);
    expect(thinking.usageMetadata).toMatchObject({ thoughtsTokenCount: thoughts, cachedContentTokenCount: 2, totalTokenCount: 2 + 3 + thoughts });

    const events = [];
    for await (const event of await ai.models.generateContentStream({ model: CHAT, contents: 'one two three' })) events.push(event);
    expect(events.map((e) => e.text).join('')).toBe('Echo: one two three');
    expect(events.length).toBe(4);
    expect(events.at(-1)!.candidates![0]!.finishReason).toBe('STOP');
    expect(events.at(-1)!.usageMetadata?.totalTokenCount).toBeGreaterThan(0);
  });

  it('calls a declared function, then answers with its result', async () => {
    const first = await ai.models.generateContent({ model: CHAT, contents: 'Weather in Paris?', config: { tools: [{ functionDeclarations: [weather] }] } });
    expect(first.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'mock' } }]);
    const second = await ai.models.generateContent({
      model: CHAT,
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ functionCall: first.functionCalls![0]! }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { celsius: 21 } } }] },
      ],
      config: { tools: [{ functionDeclarations: [weather] }] },
    });
    expect(second.text).toBe('The function get_weather returned {"celsius":21}');
  });

  it('answers JSON that follows the response schema', async () => {
    const reply = await ai.models.generateContent({
      model: CHAT,
      contents: 'A person',
      config: { responseMimeType: 'application/json', responseSchema: { type: Type.OBJECT, properties: { name: { type: Type.STRING }, age: { type: Type.INTEGER } } } },
    });
    expect(JSON.parse(reply.text!)).toEqual({ name: 'mock', age: 1 });
  });

  it('embeds one content and several, the same text the same vector', async () => {
    const one = await ai.models.embedContent({ model: 'text-embedding-004', contents: 'hello' });
    const many = await ai.models.embedContent({ model: 'text-embedding-004', contents: ['hello', 'world'], config: { outputDimensionality: 8 } });
    expect(one.embeddings).toHaveLength(1);
    expect(many.embeddings).toHaveLength(2);
    expect(many.embeddings![0]!.values).toEqual(one.embeddings![0]!.values);
    expect(mock.received.map((r) => r.method)).toEqual(['batchEmbedContents', 'batchEmbedContents']);
    const direct = await fetch(`${mock.url}/v1beta/models/text-embedding-004:embedContent`, {
      method: 'POST', headers: { 'x-goog-api-key': mock.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ content: { parts: [{ text: 'hello' }] } }),
    });
    expect(((await direct.json()) as { embedding: { values: number[] } }).embedding.values).toEqual(one.embeddings![0]!.values);
  });
});
