/**
 * Google's own SDK against the mock: proves the mock speaks the wire format real Gemini clients
 * expect, so tests built on it (and on the gateway relaying it) mean something.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, GoogleGenAI } from '@google/genai';
import { geminiGenerateRequest } from '@gateway/contracts';
import { startMockGeminiUpstream, mockSpeech, type MockGeminiUpstream } from './mock-gemini-upstream.ts';
import { twoSpeakers } from './speech-samples.ts';

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
