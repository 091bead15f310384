import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { geminiGenerateRequest, geminiInlineAudio, UpstreamError, type GeminiGenerateRequest, type GeminiGenerateResponse } from '@gateway/contracts';
import { freePort } from '@gateway/local-stack';
import { mockSpeech, startMockGeminiUpstream, type MockGeminiUpstream } from '@gateway/testkit';
import { callUpstream, operationUrl, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { gemini } from './index.ts';

const generateContent = (target: UpstreamTarget, request: GeminiGenerateRequest) => callUpstream(gemini.generateContent, target, request);
const streamGenerateContent = (target: UpstreamTarget, request: GeminiGenerateRequest) => streamUpstream(gemini.generateContent, target, request);
const url = (baseUrl: string, model: string, stream = false) => operationUrl(gemini.generateContent, baseUrl, model, stream);

const request = (text: string): GeminiGenerateRequest =>
  geminiGenerateRequest.parse({
    model: 'what-the-client-asked-for',
    contents: [{ role: 'user', parts: [{ text }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
  });

let mock: MockGeminiUpstream;
let target: UpstreamTarget;

beforeAll(async () => {
  mock = await startMockGeminiUpstream({ safetyRatings: false });
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  target = { channel: { base_url: mock.url }, key: mock.apiKey, upstreamModel: 'gemini-2.5-flash-preview-tts', timeoutMs: 2000 };
});

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => {
      expect(error).toBeInstanceOf(UpstreamError);
      return error as UpstreamError;
    },
  );

const pcmOf = (reply: GeminiGenerateResponse) => Buffer.concat(geminiInlineAudio(reply).map((a) => Buffer.from(a.data, 'base64')));

describe('the Gemini endpoint', () => {
  it('builds endpoint URLs from any spelling of a base_url', () => {
    const expected = 'https://g.example/v1beta/models/tts-1:generateContent';
    expect(url('https://g.example', 'tts-1')).toBe(expected);
    expect(url('https://g.example/', 'models/tts-1')).toBe(expected);
    expect(url('https://g.example/v1beta/', 'tts-1')).toBe(expected);
    expect(url('https://g.example', 'tts-1', true)).toBe(
      'https://g.example/v1beta/models/tts-1:streamGenerateContent?alt=sse',
    );
  });
});

describe('generateContent', () => {
  it("returns the upstream's audio with safetyRatings and full usage", async () => {
    const text = 'Hello from the provider client';
    const reply = await generateContent(target, request(text));
    expect(pcmOf(reply).length).toBe(mockSpeech(text).pcmBytes);
    expect(reply.candidates?.[0]).toMatchObject({ finishReason: 'STOP', safetyRatings: [] });
    expect(reply.usageMetadata).toMatchObject({ promptTokenCount: 8, candidatesTokenCount: 38, totalTokenCount: 46 });
    expect(reply.usageMetadata?.candidatesTokensDetails).toEqual([{ modality: 'AUDIO', tokenCount: 38 }]);

    // Sent to the channel's model, with the channel's key, without the client's body `model`.
    const sent = mock.received[0]!;
    expect(sent).toMatchObject({ model: 'gemini-2.5-flash-preview-tts', method: 'generateContent', apiKey: mock.apiKey });
    expect(sent.body).not.toHaveProperty('model');
  });

  it('keeps the safetyRatings an upstream sends', async () => {
    mock.set({ safetyRatings: true });
    const reply = await generateContent(target, request('hi'));
    expect(reply.candidates?.[0]?.safetyRatings).toHaveLength(4);
  });

  it('reports an upstream 500 as an http failure with its status and body', async () => {
    mock.failNext(1, 500, 'exploded');
    const error = await failureOf(generateContent(target, request('hi')));
    expect(error).toMatchObject({ kind: 'http', status: 500 });
    expect(error.body).toEqual({ error: { code: 500, message: 'exploded', status: 'INTERNAL' } });
    expect(error.message).toContain('exploded');
  });

  it("reads Gemini's retry delay from a 429 body", async () => {
    mock.failNext(1, 429);
    const error = await failureOf(generateContent(target, request('hi')));
    expect(error).toMatchObject({ kind: 'http', status: 429, retryAfter: 1 });
  });

  it("reports Gemini's 400 API_KEY_INVALID as the 401 it means, and a refused key as 403", async () => {
    const strict = await startMockGeminiUpstream({ apiKey: 'right', invalidKeyStatus: 400 });
    try {
      const error = await failureOf(generateContent({ ...target, channel: { base_url: strict.url }, key: 'wrong' }, request('hi')));
      expect(error).toMatchObject({ kind: 'http', status: 401 });
    } finally {
      await strict.close();
    }
    expect(await failureOf(generateContent({ ...target, key: 'wrong' }, request('hi')))).toMatchObject({ kind: 'http', status: 403 });
  });

  it('times out', async () => {
    mock.set({ delayMs: 1000 });
    const started = performance.now();
    const error = await failureOf(generateContent({ ...target, timeoutMs: 150 }, request('hi')));
    expect(error.kind).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(900);
    await mock.waitFor((m) => m.stats.aborted === 1);
  });

  it('stops when the caller aborts, and the upstream sees the call go away', async () => {
    mock.set({ hang: true });
    const controller = new AbortController();
    const pending = failureOf(generateContent({ ...target, signal: controller.signal }, request('hi')));
    await mock.waitFor((m) => m.stats.inFlight === 1);
    controller.abort();
    expect((await pending).kind).toBe('cancelled');
    await mock.waitFor((m) => m.stats.aborted === 1 && m.stats.inFlight === 0);
  });

  it('classifies a refused connection and a reset connection', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    expect((await failureOf(generateContent({ ...target, channel: { base_url: closed } }, request('hi')))).kind).toBe('connection');
    mock.failNext(1, 'reset');
    expect((await failureOf(generateContent(target, request('hi')))).kind).toBe('connection');
  });

  it('carries a 1 MB reply', async () => {
    mock.set({ pcmBytes: 786_432 });
    const reply = await generateContent(target, request('hi'));
    expect(geminiInlineAudio(reply)[0]!.data.length).toBe(1024 * 1024);
  });
});

describe('streamGenerateContent', () => {
  it('yields each event as the upstream sends it', async () => {
    mock.set({ streamChunkMs: 200, streamIntervalMs: 50 });
    const text = 'x'.repeat(20); // 1,000 ms → 5 events
    const events = await streamGenerateContent(target, request(text));
    const arrivals: number[] = [];
    const replies: GeminiGenerateResponse[] = [];
    for await (const event of events) {
      arrivals.push(performance.now());
      replies.push(event);
    }
    expect(replies).toHaveLength(5);
    expect(Buffer.concat(replies.map(pcmOf)).length).toBe(mockSpeech(text).pcmBytes);
    expect(replies.every((r) => Array.isArray(r.candidates?.[0]?.safetyRatings))).toBe(true);
    expect(replies.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(replies.at(-1)?.usageMetadata?.totalTokenCount).toBe(30);
    // Chunk by chunk, not all at the end.
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(150);
    expect(mock.received[0]?.method).toBe('streamGenerateContent');
  });

  it('rejects before any event when the upstream refuses, so the router can fail over', async () => {
    mock.failNext(1, 503);
    expect(await failureOf(streamGenerateContent(target, request('hi')))).toMatchObject({ kind: 'http', status: 503 });
  });

  it('reports a stream that breaks mid-way as a connection failure, after the events that came', async () => {
    mock.set({ streamChunkMs: 100, breakAfterEvents: 2 });
    const events = await streamGenerateContent(target, request('x'.repeat(20)));
    const seen: GeminiGenerateResponse[] = [];
    const error = await failureOf((async () => {
      for await (const event of events) seen.push(event);
    })());
    expect(seen).toHaveLength(2);
    expect(error.kind).toBe('connection');
  });

  it('times out when the next event takes too long', async () => {
    // undici keeps stream time-outs on a clock of about half a second: the next event comes well after.
    mock.set({ streamChunkMs: 100, streamIntervalMs: 2000 });
    const events = await streamGenerateContent({ ...target, timeoutMs: 200 }, request('x'.repeat(20)));
    const error = await failureOf((async () => {
      for await (const _event of events) { /* drain */ }
    })());
    expect(error.kind).toBe('timeout');
  });

  it('stops when the caller aborts mid-stream', async () => {
    mock.set({ streamChunkMs: 100, streamIntervalMs: 500 });
    const controller = new AbortController();
    const events = await streamGenerateContent({ ...target, signal: controller.signal }, request('x'.repeat(20)));
    const first = await events.next();
    expect(first.done).toBe(false);
    controller.abort();
    expect((await failureOf(events.next())).kind).toBe('cancelled');
    await mock.waitFor((m) => m.stats.aborted === 1);
  });
});
