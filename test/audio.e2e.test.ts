/**
 * Speech generation end to end: real Redis, real admin-worker, audio-worker and gateway
 * processes, mock Gemini TTS upstreams over real HTTP, and Google's own `@google/genai` SDK as
 * the client with nothing changed but `httpOptions.baseUrl` and `apiKey` (a gateway sk- key).
 */
import { describe, expect } from 'vitest';
import { ApiError, GoogleGenAI, type GenerateContentParameters, type GenerateContentResponse } from '@google/genai';
import { freePort } from '@gateway/local-stack';
import { caught, gatewayLogsCaughtUp, mockSpeech, postJson, twoSpeakers } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['audio-worker'], env: { REQUEST_TIMEOUT_MS: '15000', AUDIO_CONCURRENCY: '8' }, channelDefaults: { timeout_ms: 5000 } })
  .extend('sdk', async ({ stack }) => (key: string) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } }))
  .extend('post', async ({ stack }) => (path: string, body: unknown, headers: Record<string, string>) => postJson(`${stack.gateway.url}${path}`, body, headers));

let seq = 0;
const uniqueModel = () => `tts-${++seq}`;
const PCM_MIME = 'audio/L16;codec=pcm;rate=24000';

const speech = (model: string, text: string, voiceName = 'Kore'): GenerateContentParameters => ({
  model,
  contents: [{ parts: [{ text }] }],
  config: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName } } } },
});

/** The PCM a reply (or the events of a stream) carries. */
const pcmOf = (...replies: GenerateContentResponse[]) =>
  Buffer.concat(replies.flatMap((r) => (r.candidates?.[0]?.content?.parts ?? []).map((p) => Buffer.from(p.inlineData?.data ?? '', 'base64'))));

const body = (text: string, voiceName = 'Kore') => ({
  contents: [{ role: 'user', parts: [{ text }] }],
  generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName } } } },
});

describe('generateContent with @google/genai', () => {
  it('one voice: PCM of the expected length, the reply in Gemini form, usage charged to key, user and channel', async ({ stack, upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    const ch = await channel(mock, [`${model}-upstream`], { model_mapping: { [model]: `${model}-upstream` } });
    const key = await apiKey();
    const before = (await stack.admin('GET', '/api/user/self')).body.data;

    const text = 'Say cheerfully: have a wonderful day!';
    const reply = await sdk(key.key).models.generateContent(speech(model, text));
    const expected = mockSpeech(text);
    expect(pcmOf(reply).length).toBe(expected.pcmBytes);
    expect(reply.candidates?.[0]).toMatchObject({
      content: { role: 'model', parts: [{ inlineData: { mimeType: PCM_MIME } }] },
      finishReason: 'STOP',
      safetyRatings: [],
    });
    const total = expected.promptTokenCount + expected.candidatesTokenCount;
    expect(reply.usageMetadata).toMatchObject({
      promptTokenCount: expected.promptTokenCount,
      candidatesTokenCount: expected.candidatesTokenCount,
      totalTokenCount: total,
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: expected.candidatesTokenCount }],
    });

    // Sent to the channel's model with the channel's key in x-goog-api-key.
    expect(mock.received[0]).toMatchObject({ model: `${model}-upstream`, method: 'generateContent', apiKey: mock.apiKey });

    // Charged off the reply path, within USAGE_FLUSH_MS.
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${key.id}`)).body.data.used_quota).toBe(total);
    const after = (await stack.admin('GET', '/api/user/self')).body.data;
    expect(after.used_quota - before.used_quota).toBe(total);
    expect(after.request_count - before.request_count).toBe(1);
    const stored = (await stack.admin('GET', `/api/channel/${ch.id}`)).body.data;
    expect(stored.used_quota).toBe(total);
    expect(JSON.stringify(stored)).not.toContain(mock.apiKey);
  });

  it('serves a model whose name holds a slash, as the model lists show it', async ({ stack, upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    const model = `vendor/${uniqueModel()}`;
    await channel(mock, ['tts-sliced'], { model_mapping: { [model]: 'tts-sliced' } });
    const key = await apiKey();
    const listed = [];
    for await (const m of await sdk(key.key).models.list()) listed.push(m.name);
    expect(listed).toContain(`models/${model}`);
    const text = 'Say it through a slash.';
    const reply = await sdk(key.key).models.generateContent(speech(model, text));
    expect(pcmOf(reply).length).toBe(mockSpeech(text).pcmBytes);
    expect(mock.received.at(-1)).toMatchObject({ model: 'tts-sliced', method: 'generateContent' });
    // Streamed too; and a name cut at a slash is no model.
    const events = [];
    for await (const event of await sdk(key.key).models.generateContentStream(speech(model, text))) events.push(event);
    expect(pcmOf(...events).length).toBe(mockSpeech(text).pcmBytes);
    const cut = await postJson(`${stack.gateway.url}/v1beta/models/vendor/:generateContent`, body(text), { 'x-goog-api-key': key.key });
    expect(cut.status).toBe(404);
  });

  it('two speakers with a language code', async ({ upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const { text, speechConfig } = twoSpeakers;
    const reply = await sdk(key).models.generateContent({ model, contents: text, config: { responseModalities: ['AUDIO'], speechConfig } });
    expect(Buffer.from(reply.data!, 'base64').length).toBe(mockSpeech(text).pcmBytes);
    const sent = mock.received[0]!.body as any;
    expect(sent.generationConfig.speechConfig.multiSpeakerVoiceConfig.speakerVoiceConfigs).toHaveLength(2);
    expect(sent.generationConfig.speechConfig.languageCode).toBe('en-US');
  });

  it('carries a 1 MB reply whole', async ({ upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    mock.set({ pcmBytes: 786_432 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const reply = await sdk(key).models.generateContent(speech(model, 'hi'));
    expect(reply.candidates![0]!.content!.parts![0]!.inlineData!.data!.length).toBe(1024 * 1024);
    expect(pcmOf(reply).length).toBe(786_432);
  });
});

describe('generateContentStream with @google/genai', () => {
  it('relays the events one by one as the upstream sends them, and charges the usage of the last', async ({ stack, upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    mock.set({ streamChunkMs: 250, streamIntervalMs: 100 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const text = 'x'.repeat(30); // 1,500 ms of audio → 6 events of 250 ms
    const stream = await sdk(key.key).models.generateContentStream(speech(model, text, 'Zephyr'));
    const events: GenerateContentResponse[] = [];
    const arrivals: number[] = [];
    for await (const event of stream) {
      events.push(event);
      arrivals.push(Date.now());
    }
    expect(events).toHaveLength(6);
    expect(pcmOf(...events).length).toBe(mockSpeech(text).pcmBytes);
    expect(events.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
    const usage = events.at(-1)!.usageMetadata!;
    expect(usage.totalTokenCount).toBe(mockSpeech(text).promptTokenCount + mockSpeech(text).candidatesTokenCount);
    // Relayed as produced (100 ms apart upstream), not bunched at the end.
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(350);
    expect(mock.received[0]?.method).toBe('streamGenerateContent');
    await expect.poll(async () => (await stack.admin('GET', `/api/token/${key.id}`)).body.data.used_quota).toBe(usage.totalTokenCount);
  });

  it("is Gemini's SSE on the wire: data events framed by CRLF, no [DONE]; a JSON array without alt=sse", async ({ upstream, channel, apiKey, post }) => {
    const mock = await upstream.gemini();
    mock.set({ streamChunkMs: 500 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const text = 'y'.repeat(20); // 1,000 ms → 2 events
    const sse = await post(`/v1beta/models/${model}:streamGenerateContent?alt=sse`, body(text), { 'x-goog-api-key': key });
    expect(sse.status).toBe(200);
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    expect(sse.text).not.toContain('[DONE]');
    const events = sse.text.split('\r\n\r\n').filter(Boolean);
    expect(events).toHaveLength(2);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);

    const array = await post(`/v1beta/models/${model}:streamGenerateContent`, body(text), { authorization: `Bearer ${key}` });
    expect(array.status).toBe(200);
    expect(array.headers.get('content-type')).toContain('application/json');
    expect(array.json).toHaveLength(2);
    expect(pcmOf(...array.json).length).toBe(mockSpeech(text).pcmBytes);
  });
});

describe('a streamed event larger than RESPONSE_BUFFER_BYTES (4 MiB)', () => {
  it('reaches a client that reads, whole, as SSE and as a JSON array: 90 s of speech in one event', async ({ upstream, channel, apiKey, post }) => {
    const mock = await upstream.gemini();
    // One event for the whole speech: 4.3 MB of PCM, 5.8 MB of base64.
    mock.set({ streamChunkMs: 200_000 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const text = 'y'.repeat(1800);
    // Before, the client was dropped as soon as the event was written: the cap counted it.
    const sse = await post(`/v1beta/models/${model}:streamGenerateContent?alt=sse`, body(text), { 'x-goog-api-key': key });
    expect(sse.status).toBe(200);
    const events = sse.text.split('\r\n\r\n').filter(Boolean).map((e) => JSON.parse(e.slice('data: '.length)) as GenerateContentResponse);
    expect(events).toHaveLength(1);
    expect(pcmOf(...events).length).toBe(mockSpeech(text).pcmBytes);
    const array = await post(`/v1beta/models/${model}:streamGenerateContent`, body(text), { 'x-goog-api-key': key });
    expect(array.status).toBe(200);
    expect(pcmOf(...(array.json as GenerateContentResponse[])).length).toBe(mockSpeech(text).pcmBytes);
  }, 60_000);
});

describe('errors, in Gemini form', () => {
  it('400 naming the field for an invalid voice, through the SDK and on the wire', async ({ upstream, channel, apiKey, sdk, post }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const field = 'generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName';

    const error = await caught(sdk(key).models.generateContent(speech(model, 'hello', 'Nobody')));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
    expect(error.message).toContain(field);
    expect(error.message).toContain('INVALID_ARGUMENT');

    const wire = await post(`/v1beta/models/${model}:generateContent`, body('hello', 'Nobody'), { 'x-goog-api-key': key });
    expect(wire.status).toBe(400);
    expect(wire.json.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining(field) });
    expect(wire.json.error.details[0].fieldViolations[0].field).toBe(field);
    expect(mock.received).toHaveLength(0);
  });

  it('400 for audio asked without a voice (a body that asks for no audio is a chat model\'s: gemini-chat.e2e.test.ts)', async ({ apiKey, sdk, post }) => {
    const { key } = await apiKey();
    const error = await caught(sdk(key).models.generateContent({ model: 'any-tts', contents: 'hello', config: { responseModalities: ['AUDIO'] } }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(400);
    expect(error.message).toContain('generationConfig.speechConfig');

    const wire = await post('/v1beta/models/any-tts:generateContent', { contents: [{ parts: [{ text: 'hi' }] }], generation_config: { response_modalities: ['audio'] } }, { 'x-goog-api-key': key });
    expect(wire.json.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(/^invalid generationConfig\.speechConfig: required/) });
  });

  it('404 NOT_FOUND for a model no channel serves, and for an unknown method', async ({ apiKey, sdk, post }) => {
    const { key } = await apiKey();
    const error = await caught(sdk(key).models.generateContent(speech('no-such-tts-model', 'hello')));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(404);
    expect(error.message).toContain('NOT_FOUND');

    const wire = await post('/v1beta/models/no-such-tts-model:generateContent', body('hello'), { 'x-goog-api-key': key });
    expect(wire.json.error).toMatchObject({ code: 404, status: 'NOT_FOUND', message: expect.stringContaining('no-such-tts-model') });
    const method = await post('/v1beta/models/any:countTokens', body('hello'), { 'x-goog-api-key': key });
    expect(method.status).toBe(404);
    expect(method.json.error.status).toBe('NOT_FOUND');
  });

  it('401 UNAUTHENTICATED for a bad key, for no key, and for a key in the query string', async ({ stack, upstream, channel, apiKey, sdk, post }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const error = await caught(sdk('sk-not-a-real-key').models.generateContent(speech(model, 'hello')));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(401);
    expect(error.message).toContain('UNAUTHENTICATED');

    const none = await post(`/v1beta/models/${model}:generateContent`, body('hello'), {});
    expect(none.status).toBe(401);
    expect(none.json.error).toMatchObject({ code: 401, status: 'UNAUTHENTICATED', message: expect.stringContaining('x-goog-api-key') });

    const { key } = await apiKey();
    const query = await post(`/v1beta/models/${model}:generateContent?key=${key}`, body('hello'), {});
    expect(query.status).toBe(401);
    expect(query.json.error.status).toBe('UNAUTHENTICATED');
    expect(query.json.error.message).toMatch(/query string.*header/);
    // Refused even alongside a valid header: a key in a URL ends up in logs.
    const both = await post(`/v1beta/models/${model}:generateContent?key=${key}`, body('hello'), { 'x-goog-api-key': key });
    expect(both.status).toBe(401);
    expect(mock.received).toHaveLength(0);
    // Nor does it reach a log line.
    await gatewayLogsCaughtUp(stack.gateway);
    expect(stack.gateway.output.join('\n')).not.toContain(key);

    // The same key in either header works.
    expect((await post(`/v1beta/models/${model}:generateContent`, body('hello'), { authorization: `Bearer ${key}` })).status).toBe(200);
    expect((await post(`/v1beta/models/${model}:generateContent`, body('hello'), { 'x-goog-api-key': key })).status).toBe(200);
  });
});

describe('routing', () => {
  it('fails over to the second channel when the first answers 500', async ({ stack, upstream, channel, apiKey, sdk }) => {
    const [failing, steady] = [await upstream.gemini(), await upstream.gemini()];
    failing.failNext(1, 500);
    const model = uniqueModel();
    await channel(failing, [model], { priority: 10 });
    const second = await channel(steady, [model], { priority: 0 });
    const key = await apiKey();
    const text = 'Failover, please.';
    const reply = await sdk(key.key).models.generateContent(speech(model, text));
    expect(pcmOf(reply).length).toBe(mockSpeech(text).pcmBytes);
    expect([failing.received.length, steady.received.length]).toEqual([1, 1]);
    expect(failing.stats.failed).toBe(1);
    // Charged to the channel that answered.
    const expected = mockSpeech(text);
    await expect.poll(async () => (await stack.admin('GET', `/api/channel/${second.id}`)).body.data.used_quota).toBe(expected.promptTokenCount + expected.candidatesTokenCount);
  });

  it('serves audio only from gemini channels: an openai channel with the same model name does not count', async ({ stack, apiKey, post }) => {
    const model = uniqueModel();
    const created = await stack.admin('POST', '/api/channel/', { name: `openai-${seq}`, type: 'openai', key: 'sk-x', base_url: 'http://127.0.0.1:9', models: [model] });
    expect(created.status).toBe(200);
    const { key } = await apiKey();
    const wire = await post(`/v1beta/models/${model}:generateContent`, body('hello'), { 'x-goog-api-key': key });
    expect(wire.status).toBe(404);
  });
});

describe('client disconnect', () => {
  it('aborts the upstream call of a request the client gave up on', async ({ upstream, channel, apiKey, sdk }) => {
    const mock = await upstream.gemini();
    mock.set({ hang: true });
    const model = uniqueModel();
    await channel(mock, [model], { timeout_ms: 60_000 });
    const { key } = await apiKey();
    const controller = new AbortController();
    const request = speech(model, 'never mind');
    const pending = caught(sdk(key).models.generateContent({ ...request, config: { ...request.config, abortSignal: controller.signal } }));
    await mock.waitFor((m) => m.stats.inFlight === 1);
    controller.abort();
    await pending;
    await mock.waitFor((m) => m.stats.aborted === 1, 2000);
  });
});

describe('scaling by processes', () => {
  it('a second audio-worker process shares the queue, with its own health and metrics port', async ({ stack, upstream, channel, apiKey, sdk }) => {
    const port = await freePort();
    const second = await stack.add('audio-worker', { METRICS_PORT: String(port) });
    try {
      const mock = await upstream.gemini();
      mock.set({ delayMs: 400 });
      const model = uniqueModel();
      await channel(mock, [model]);
      const { key } = await apiKey();
      const jobs = (name: 'first' | 'second') =>
        stack.services
          .filter((s) => s.name === 'audio-worker' && (name === 'second') === (s === second))
          .flatMap((s) => s.logs)
          .filter((l) => l.msg === 'job' && l.queue === 'audio' && l.outcome === 'ok').length;
      // The first worker has logged the jobs of earlier tests: only this test's count.
      const firstBefore = jobs('first');
      // 16 at once with AUDIO_CONCURRENCY=8: 16 upstream calls at a time only if both processes take jobs.
      await Promise.all(Array.from({ length: 16 }, () => sdk(key).models.generateContent(speech(model, 'in parallel'))));
      expect(mock.stats.maxInFlight).toBe(16);
      // Each worker logs a job's line just after its reply is sent, through an asynchronous log
      // destination: wait for this test's 16 lines to arrive.
      await expect.poll(() => jobs('first') - firstBefore + jobs('second'), { timeout: 10_000 }).toBe(16);
      expect(jobs('first') - firstBefore).toBeGreaterThan(0);
      expect(jobs('second')).toBeGreaterThan(0);

      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/worker_jobs_total\{[^}]*queue="audio"[^}]*outcome="ok"[^}]*\} \d+/);
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
