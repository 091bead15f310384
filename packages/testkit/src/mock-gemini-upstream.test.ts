import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMockGeminiUpstream, mockSpeech, type MockGeminiUpstream } from './mock-gemini-upstream.ts';

const MODEL = 'gemini-2.5-flash-preview-tts';

const speechBody = (text: string) => ({
  contents: [{ role: 'user', parts: [{ text }] }],
  generationConfig: {
    responseModalities: ['AUDIO'],
    speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } },
  },
});

let mock: MockGeminiUpstream;

function call(body: unknown, { method = 'generateContent', key = mock.apiKey, query = '', signal }: { method?: string; key?: string | null; query?: string; signal?: AbortSignal } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key !== null) headers['x-goog-api-key'] = key;
  return fetch(`${mock.url}/v1beta/models/${MODEL}:${method}${query}`, { method: 'POST', headers, body: JSON.stringify(body), signal });
}

interface Reply {
  candidates: { content: { role: string; parts: { inlineData: { mimeType: string; data: string } }[] }; finishReason?: string; safetyRatings?: unknown[] }[];
  usageMetadata?: Record<string, unknown>;
}

const audioOf = (reply: Reply) => Buffer.from(reply.candidates[0]!.content.parts[0]!.inlineData.data, 'base64');

beforeAll(async () => {
  mock = await startMockGeminiUpstream();
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

describe('mock Gemini upstream', () => {
  it('answers 24 kHz 16-bit PCM whose length follows the documented formula', async () => {
    const text = 'Hello there, twenty!'; // 20 characters → 1,000 ms → 48,000 bytes
    const response = await call(speechBody(text));
    expect(response.status).toBe(200);
    const reply = (await response.json()) as Reply;
    const audio = audioOf(reply);
    expect(audio.length).toBe(20 * 2400);
    expect(mockSpeech(text).pcmBytes).toBe(audio.length);
    expect(reply.candidates[0]!.content.role).toBe('model');
    expect(reply.candidates[0]!.content.parts[0]!.inlineData.mimeType).toBe('audio/L16;codec=pcm;rate=24000');
    expect(reply.candidates[0]!.finishReason).toBe('STOP');
    expect(reply.candidates[0]!.safetyRatings).toBeUndefined();
    expect(reply.usageMetadata).toEqual({
      promptTokenCount: 5,
      candidatesTokenCount: 25,
      totalTokenCount: 30,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: 5 }],
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: 25 }],
    });
    // A real tone, not silence: peaks near the amplitude the mock writes.
    const samples = Array.from({ length: audio.length / 2 }, (_, i) => audio.readInt16LE(i * 2));
    expect(Math.max(...samples)).toBeGreaterThan(7000);
    expect(mock.received[0]).toMatchObject({ model: MODEL, method: 'generateContent', apiKey: mock.apiKey });
    expect(mock.stats).toMatchObject({ requests: 1, completed: 1, inFlight: 0, maxInFlight: 1 });
  });

  it('counts every text part of every content, and longer text gives longer audio', async () => {
    const body = speechBody('abc');
    body.contents.push({ role: 'user', parts: [{ text: 'défg' }] }); // 7 code points
    const reply = (await (await call(body)).json()) as Reply;
    expect(audioOf(reply).length).toBe(7 * 2400);
  });

  it('streams server-sent events, one whole response per event, no [DONE]', async () => {
    mock.set({ streamChunkMs: 400 });
    const text = 'x'.repeat(20); // 1,000 ms → events of 400, 400 and 200 ms
    const response = await call(speechBody(text), { method: 'streamGenerateContent', query: '?alt=sse' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const raw = await response.text();
    expect(raw.endsWith('\r\n\r\n')).toBe(true);
    const events = raw.split('\r\n\r\n').filter(Boolean);
    expect(events).toHaveLength(3);
    expect(raw).not.toContain('[DONE]');
    const replies = events.map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      return JSON.parse(event.slice('data: '.length)) as Reply;
    });
    expect(replies.map((r) => audioOf(r).length)).toEqual([19_200, 19_200, 9_600]);
    expect(replies.map((r) => r.candidates[0]!.finishReason)).toEqual([undefined, undefined, 'STOP']);
    expect(replies.map((r) => r.usageMetadata?.totalTokenCount)).toEqual([undefined, undefined, 30]);
    // The pieces join into the same audio the unary call returns.
    const whole = audioOf((await (await call(speechBody(text))).json()) as Reply);
    expect(Buffer.concat(replies.map(audioOf)).equals(whole)).toBe(true);
  });

  it('streams a JSON array without alt=sse, as Gemini does', async () => {
    const response = await call(speechBody('x'.repeat(50)), { method: 'streamGenerateContent' });
    const replies = (await response.json()) as Reply[];
    expect(replies).toHaveLength(3);
    expect(Buffer.concat(replies.map(audioOf)).length).toBe(50 * 2400);
  });

  it('requires the key in x-goog-api-key, answering Gemini error bodies', async () => {
    const missing = await call(speechBody('hi'), { key: null });
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: unknown }).error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED' });
    const wrong = await call(speechBody('hi'), { key: 'nope' });
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as { error: unknown }).error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
  });

  it("can reject a bad key the way Gemini itself does (400 API_KEY_INVALID), and serve only some models", async () => {
    const strict = await startMockGeminiUpstream({ apiKey: 'k', invalidKeyStatus: 400, models: ['tts-a'] });
    try {
      const post = (model: string, key: string) =>
        fetch(`${strict.url}/v1beta/models/${model}:generateContent`, {
          method: 'POST',
          headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify(speechBody('hi')),
        });
      const bad = await post('tts-a', 'x');
      expect(bad.status).toBe(400);
      expect(JSON.stringify(await bad.json())).toContain('API_KEY_INVALID');
      const unknown = await post('tts-b', 'k');
      expect(unknown.status).toBe(404);
      expect(((await unknown.json()) as { error: unknown }).error).toMatchObject({ status: 'NOT_FOUND' });
      expect((await post('tts-a', 'k')).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  it('refuses an invalid speech request with 400 INVALID_ARGUMENT naming the field', async () => {
    const body = speechBody('hi');
    body.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName = 'Alexa';
    const response = await call(body);
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { status: string; message: string } };
    expect(error.status).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName');
  });

  it('fails the next K requests with status N, then recovers', async () => {
    mock.failNext(2, 503);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(speechBody('hi'))).status);
    expect(statuses).toEqual([503, 503, 200]);
    expect(mock.stats.failed).toBe(2);

    mock.failNext(1, 500, 'boom');
    const failed = await call(speechBody('hi'));
    expect(await failed.json()).toEqual({ error: { code: 500, message: 'boom', status: 'INTERNAL' } });
  });

  it('can reset the connection', async () => {
    mock.failNext(1, 'reset');
    await expect(call(speechBody('hi'))).rejects.toThrow();
    expect((await call(speechBody('hi'))).status).toBe(200);
  });

  it('rate-limits with 429 RESOURCE_EXHAUSTED past N concurrent requests', async () => {
    mock.set({ maxConcurrent: 2, delayMs: 200 });
    const responses = await Promise.all(Array.from({ length: 5 }, () => call(speechBody('hi'))));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    const limited = responses.find((r) => r.status === 429)!;
    expect(((await limited.json()) as { error: unknown }).error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
    expect(mock.stats).toMatchObject({ maxInFlight: 2, rateLimited: 3, completed: 2 });
  });

  it('delays replies', async () => {
    mock.set({ delayMs: 300 });
    const started = performance.now();
    expect((await call(speechBody('hi'))).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('hangs until the caller gives up, and counts the abort', async () => {
    mock.set({ hang: true });
    await expect(call(speechBody('hi'), { signal: AbortSignal.timeout(150) })).rejects.toThrow();
    await mock.waitFor((m) => m.stats.aborted === 1);
    expect(mock.stats.inFlight).toBe(0);

    mock.set({ hang: false });
    mock.failNext(1, 'hang');
    await expect(call(speechBody('hi'), { signal: AbortSignal.timeout(150) })).rejects.toThrow();
    expect((await call(speechBody('hi'))).status).toBe(200);
  });

  it('answers a fixed reply size for memory tests', async () => {
    mock.set({ pcmBytes: 786_432 });
    const reply = (await (await call(speechBody('short'))).json()) as Reply;
    expect(reply.candidates[0]!.content.parts[0]!.inlineData.data.length).toBe(1024 * 1024);
  });

  it('can break a stream after some events', async () => {
    mock.set({ streamChunkMs: 100, breakAfterEvents: 2 });
    const response = await call(speechBody('x'.repeat(40)), { method: 'streamGenerateContent', query: '?alt=sse' });
    await expect(response.text()).rejects.toThrow();
    await mock.waitFor((m) => m.stats.inFlight === 0);
    expect(mock.stats.failed).toBe(1);
    expect(mock.stats.aborted).toBe(0);
  });

  it('sends the events before a break whole, so the caller reads them before the connection drops', async () => {
    mock.set({ streamChunkMs: 100, breakAfterEvents: 2 });
    const response = await call(speechBody('x'.repeat(40)), { method: 'streamGenerateContent', query: '?alt=sse' });
    const reader = response.body!.getReader();
    let text = '';
    await expect((async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += Buffer.from(value).toString('utf8');
      }
    })()).rejects.toThrow();
    expect(text.split('\r\n\r\n').filter(Boolean)).toHaveLength(2);
  });
});
