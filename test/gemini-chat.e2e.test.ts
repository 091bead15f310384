/**
 * Gemini's own format for chat and embedding models, end to end: real Redis, PostgreSQL,
 * admin-worker, completion-worker and gateway processes, mock upstreams over real HTTP, and the
 * clients applications use with nothing changed but the base URL and key: `@google/genai` 3.x
 * (which calls `/v1`) and 2.x (`/v1beta`), and the Vercel AI SDK's `@ai-sdk/google`.
 */
import { describe, expect } from 'vitest';
import { ApiError, GoogleGenAI, Type } from '@google/genai';
import { GoogleGenAI as GoogleGenAI2 } from 'google-genai-2';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { embed, embedMany, generateText, streamText } from 'ai';
import { caught, MOCK_THOUGHT, postJson, type MockGeminiUpstream } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
  startTimeoutMs: 180_000,
});

let seq = 0;
const uniqueModel = (kind = 'chat') => `gemini-${kind}-${++seq}`;
const requestId = () => `gemini-chat-${Date.now()}-${++seq}`;

/** The two majors of Google's SDK applications run today, each with its own default API version. */
const SDKS = [
  ['@google/genai 3.x', (baseUrl: string, apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl, timeout: 15_000 } })],
  ['@google/genai 2.x', (baseUrl: string, apiKey: string) => new GoogleGenAI2({ apiKey, httpOptions: { baseUrl, timeout: 15_000 } }) as unknown as GoogleGenAI],
] as const;

const weather = { name: 'get_weather', description: 'The weather in a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

/** A gemini channel serving `model` as `<model>-up`, and a key. */
async function geminiChat(upstream: { gemini(): Promise<MockGeminiUpstream> }, channel: (mock: MockGeminiUpstream, models: string[], fields?: Record<string, unknown>) => Promise<unknown>, model: string) {
  const mock = await upstream.gemini();
  await channel(mock, [`${model}-up`], { model_mapping: { [model]: `${model}-up` } });
  return mock;
}

for (const [name, sdkAt] of SDKS) {
  describe(`${name}: a chat model on a gemini channel`, () => {
    it('generateContent: the request passed through, the reply and usage as the upstream sent them, logged and charged', async ({ stack, upstream, channel, apiKey }) => {
      const model = uniqueModel();
      const mock = await geminiChat(upstream, channel, model);
      const key = await apiKey();
      const id = requestId();

      const reply = await sdkAt(stack.gateway.url, key.key).models.generateContent({
        model,
        contents: 'Say hello',
        config: { systemInstruction: 'Be brief.', temperature: 0.2, maxOutputTokens: 50, httpOptions: { headers: { 'x-request-id': id } } },
      });
      expect(reply.text).toBe('Echo: Say hello');
      expect(reply.candidates![0]!.finishReason).toBe('STOP');
      expect(reply.usageMetadata).toMatchObject({ promptTokenCount: 5, candidatesTokenCount: 4, totalTokenCount: 9 });
      // Untranslated: the upstream got the channel's model and the SDK's body.
      const sent = mock.received.at(-1)!;
      expect(sent).toMatchObject({ model: `${model}-up`, method: 'generateContent', apiKey: mock.apiKey });
      expect(sent.body).toMatchObject({
        contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }],
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        generationConfig: { temperature: 0.2, maxOutputTokens: 50 },
      });

      const row = await loggedRow(stack, id);
      expect(row).toMatchObject({ status: 200, model, route: '/v1beta/models/{model}:generateContent', prompt_tokens: 5, completion_tokens: 4, total_tokens: 9, streamed: false });
      await expect.poll(() => usedQuota(stack, key.id)).toBe(9);
    });

    it('generateContentStream: text piece by piece, a thought part first, usage with thoughts and cached tokens last', async ({ stack, upstream, channel, apiKey }) => {
      const model = uniqueModel();
      const mock = await geminiChat(upstream, channel, model);
      mock.set({ cachedTokens: 2, streamIntervalMs: 20 });
      const key = await apiKey();
      const id = requestId();

      const stream = await sdkAt(stack.gateway.url, key.key).models.generateContentStream({
        model,
        contents: 'one two three four',
        config: { thinkingConfig: { includeThoughts: true }, httpOptions: { headers: { 'x-request-id': id } } },
      });
      const events = [];
      for await (const event of stream) events.push(event);
      expect(events[0]!.candidates![0]!.content!.parts![0]).toEqual({ text: MOCK_THOUGHT, thought: true });
      const answer = events.flatMap((e) => e.candidates![0]!.content!.parts!.filter((p) => !p.thought).map((p) => p.text)).join('');
      expect(answer).toBe('Echo: one two three four');
      expect(events.length).toBe(6);
      const usage = events.at(-1)!.usageMetadata!;
      const thoughts = Math.ceil(MOCK_THOUGHT.length / 4);
      expect(usage).toMatchObject({ promptTokenCount: 5, candidatesTokenCount: 6, thoughtsTokenCount: thoughts, cachedContentTokenCount: 2, totalTokenCount: 11 + thoughts });
      expect(mock.received.at(-1)).toMatchObject({ method: 'streamGenerateContent' });

      const row = await loggedRow(stack, id);
      expect(row).toMatchObject({ status: 200, route: '/v1beta/models/{model}:streamGenerateContent', streamed: true, prompt_tokens: 5, completion_tokens: 6 + thoughts, total_tokens: 11 + thoughts });
      await expect.poll(() => usedQuota(stack, key.id)).toBe(11 + thoughts);
    });

    it('a function call turn: the call, then the answer to its result', async ({ stack, upstream, channel, apiKey }) => {
      const model = uniqueModel();
      const mock = await geminiChat(upstream, channel, model);
      const { key } = await apiKey();
      const ai = sdkAt(stack.gateway.url, key);
      const tools = [{ functionDeclarations: [weather] }];

      const first = await ai.models.generateContent({ model, contents: 'Weather in Paris?', config: { tools } });
      expect(first.functionCalls).toEqual([{ name: 'get_weather', args: { city: 'mock' } }]);
      const second = await ai.models.generateContent({
        model,
        contents: [
          { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
          { role: 'model', parts: [{ functionCall: first.functionCalls![0]! }] },
          { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { celsius: 21 } } }] },
        ],
        config: { tools },
      });
      expect(second.text).toBe('The function get_weather returned {"celsius":21}');
      expect((mock.received.at(-1)!.body as any).tools[0].functionDeclarations[0]).toMatchObject({ name: 'get_weather' });
    });

    it('JSON following a response schema', async ({ stack, upstream, channel, apiKey }) => {
      const model = uniqueModel();
      const mock = await geminiChat(upstream, channel, model);
      const { key } = await apiKey();
      const reply = await sdkAt(stack.gateway.url, key).models.generateContent({
        model,
        contents: 'A person',
        config: { responseMimeType: 'application/json', responseSchema: { type: Type.OBJECT, properties: { name: { type: Type.STRING }, age: { type: Type.INTEGER } } } },
      });
      expect(JSON.parse(reply.text!)).toEqual({ name: 'mock', age: 1 });
      expect((mock.received.at(-1)!.body as any).generationConfig).toMatchObject({ responseMimeType: 'application/json', responseSchema: { type: 'OBJECT' } });
    });
  });

  describe(`${name}: embedContent`, () => {
    it('on a gemini channel: one content and several, passed through as one batch, charged', async ({ stack, upstream, channel, apiKey }) => {
      const model = uniqueModel('embed');
      const mock = await geminiChat(upstream, channel, model);
      const key = await apiKey();
      const ai = sdkAt(stack.gateway.url, key.key);
      const id = requestId();

      const one = await ai.models.embedContent({ model, contents: 'hello there', config: { httpOptions: { headers: { 'x-request-id': id } } } });
      const many = await ai.models.embedContent({ model, contents: ['hello there', 'world'], config: { outputDimensionality: 4, taskType: 'RETRIEVAL_DOCUMENT' } });
      expect(one.embeddings).toHaveLength(1);
      expect(one.embeddings![0]!.values).toHaveLength(8);
      expect(many.embeddings!.map((e) => e.values!.length)).toEqual([4, 4]);
      expect(many.embeddings![0]!.values).toEqual(one.embeddings![0]!.values!.slice(0, 4));
      const sent = mock.received.at(-1)!;
      expect(sent).toMatchObject({ model: `${model}-up`, method: 'batchEmbedContents' });
      expect((sent.body as any).requests[1]).toEqual({ model: `models/${model}-up`, content: { parts: [{ text: 'world' }], role: 'user' }, taskType: 'RETRIEVAL_DOCUMENT', outputDimensionality: 4 });

      // Gemini reports no usage: 11 ASCII characters are estimated 3 tokens.
      const row = await loggedRow(stack, id);
      expect(row).toMatchObject({ status: 200, route: '/v1beta/models/{model}:batchEmbedContents', prompt_tokens: 3, total_tokens: 3 });
      await expect.poll(() => usedQuota(stack, key.id)).toBe(3 + 3 + 2);
    });

    it('on an openai channel: translated to /v1/embeddings and back, charged by its usage', async ({ stack, upstream, channel, apiKey }) => {
      const mock = await upstream.openai();
      const model = uniqueModel('embed');
      await channel(mock, [model]);
      const key = await apiKey();
      const reply = await sdkAt(stack.gateway.url, key.key).models.embedContent({ model, contents: ['the quick fox', 'jumps'], config: { outputDimensionality: 6 } });
      expect(reply.embeddings!.map((e) => e.values!.length)).toEqual([6, 6]);
      const sent = mock.requests.at(-1)!;
      expect(sent.path).toBe('/v1/embeddings');
      expect(sent.body).toMatchObject({ model, input: ['the quick fox', 'jumps'], dimensions: 6, encoding_format: 'float' });
      // The mock counts words: 3 + 1.
      await expect.poll(() => usedQuota(stack, key.id)).toBe(4);
    });
  });
}

describe('a gemini door on an anthropic channel', () => {
  it('charges and logs the prompt cache\'s writes, which Gemini\'s usage has no field for, at the channel\'s cache_write_ratio', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.anthropic({ cacheUse: { read: 100, written: 200 }, text: 'Noted.' });
    const model = uniqueModel();
    await channel(mock, [model], { cache_read_ratio: 0.1, cache_write_ratio: 1.25 });
    const { key } = await apiKey();
    const id = requestId();
    const answer = await postJson(`${stack.gateway.url}/v1beta/models/${model}:generateContent`, { contents: [{ role: 'user', parts: [{ text: 'Keep this note for later. '.repeat(80) }] }], generationConfig: { maxOutputTokens: 50 } }, { 'x-goog-api-key': key, 'x-request-id': id });
    expect(answer.status).toBe(200);
    const usage = answer.json.usageMetadata;
    expect(Object.keys(usage)).not.toContain('cacheWriteTokens');
    expect(usage.cachedContentTokenCount).toBe(100);
    const charge = usage.promptTokenCount - 300 + (usage.totalTokenCount - usage.promptTokenCount) + Math.ceil(100 * 0.1 + 200 * 1.25);
    expect(await loggedRow(stack, id)).toMatchObject({ cache_read_tokens: 100, cache_write_tokens: 200, quota: charge });
  });
});

describe('Gemini-shaped errors', () => {
  it('a key out of quota is 429 RESOURCE_EXHAUSTED before any upstream call, as chat completions are refused', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    const mock = await geminiChat(upstream, channel, model);
    const key = await apiKey({ unlimited_quota: false, remain_quota: 5 });
    const ai = new GoogleGenAI({ apiKey: key.key, httpOptions: { baseUrl: stack.gateway.url } });
    await ai.models.generateContent({ model, contents: 'Say hello' });
    await expect.poll(async () => (await stack.adminData('GET', `/api/token/${key.id}`)).remain_quota).toBe(5 - 7);
    const error = await caught(ai.models.generateContent({ model, contents: 'Say hello' }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(429);
    expect(error.message).toContain('RESOURCE_EXHAUSTED');
    expect(mock.received).toHaveLength(1);
  });

  it('a bad key is 401 UNAUTHENTICATED; a key without the model 403 PERMISSION_DENIED', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    await geminiChat(upstream, channel, model);
    const error = await caught(new GoogleGenAI({ apiKey: 'sk-not-a-real-key', httpOptions: { baseUrl: stack.gateway.url } }).models.generateContent({ model, contents: 'hi' }));
    expect(error).toBeInstanceOf(ApiError);
    expect(error.status).toBe(401);
    expect(error.message).toContain('UNAUTHENTICATED');

    const { key } = await apiKey({ models: ['another-model'] });
    const body = { contents: [{ parts: [{ text: 'hi' }] }] };
    const denied = await postJson(`${stack.gateway.url}/v1beta/models/${model}:generateContent`, body, { 'x-goog-api-key': key });
    expect(denied.status).toBe(403);
    expect(denied.json.error).toMatchObject({ code: 403, status: 'PERMISSION_DENIED' });
    // A key in the URL is refused, as on every route (URLs end up in logs): the SDKs send the header.
    const query = await postJson(`${stack.gateway.url}/v1/models/${model}:generateContent?key=${key}`, body, {});
    expect(query.status).toBe(401);
    expect(query.json.error).toMatchObject({ status: 'UNAUTHENTICATED', message: expect.stringMatching(/query string.*x-goog-api-key/) });
  });

  it('a bad body is 400 INVALID_ARGUMENT naming the field, through the SDK and on the wire; nothing reaches the upstream', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    const mock = await geminiChat(upstream, channel, model);
    const { key } = await apiKey();
    const error = await caught(new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url } }).models.generateContent({ model, contents: 'hi', config: { tools: [{ googleSearch: {} }] } }));
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/INVALID_ARGUMENT.*tools\[0\]\.googleSearch/);

    const post = (path: string, body: unknown) => postJson(`${stack.gateway.url}${path}`, body, { 'x-goog-api-key': key });
    const unknownField = await post(`/v1beta/models/${model}:generateContent`, { contents: [{ parts: [{ text: 'hi' }] }], temprature: 1 });
    expect(unknownField.status).toBe(400);
    expect(unknownField.json.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', details: [{ fieldViolations: [{ field: 'temprature' }] }] });
    const emptyParts = await post(`/v1/models/${model}:streamGenerateContent?alt=sse`, { contents: [{ role: 'user', parts: [] }] });
    expect(emptyParts.json.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('contents[0].parts') });
    const otherModel = await post(`/v1beta/models/${model}:batchEmbedContents`, { requests: [{ model: 'models/other', content: { parts: [{ text: 'x' }] } }] });
    expect(otherModel.json.error).toMatchObject({ code: 400, details: [{ fieldViolations: [{ field: 'requests[0].model' }] }] });
    const cached = await post(`/v1beta/models/${model}:generateContent`, { contents: [{ parts: [{ text: 'hi' }] }], cachedContent: 'cachedContents/abc' });
    expect(cached.json.error.message).toMatch(/cachedContent.*not served/);
    expect(mock.received).toHaveLength(0);
  });

  it('a model no channel serves is 404 NOT_FOUND', async ({ stack, apiKey }) => {
    const { key } = await apiKey();
    const error = await caught(new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url } }).models.generateContent({ model: 'no-such-chat-model', contents: 'hi' }));
    expect(error.status).toBe(404);
    expect(error.message).toContain('NOT_FOUND');
  });
});

describe('routing', () => {
  it('fails over to a second gemini channel when the first answers 500 before its first event, whole and streamed', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    const failing = await upstream.gemini();
    const healthy = await upstream.gemini();
    await channel(failing, [model], { priority: 10 });
    await channel(healthy, [model], { priority: 0 });
    const { key } = await apiKey();
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url } });
    failing.failNext(2, 500);
    expect((await ai.models.generateContent({ model, contents: 'hi' })).text).toBe('Echo: hi');
    const events = [];
    for await (const event of await ai.models.generateContentStream({ model, contents: 'hi there' })) events.push(event);
    expect(events.map((e) => e.text).join('')).toBe('Echo: hi there');
    expect(failing.stats.failed).toBe(2);
    expect(healthy.received.map((r) => r.method)).toEqual(['generateContent', 'streamGenerateContent']);
  });
});

describe('a stream its client leaves', () => {
  it("is charged the upstream's usage of its last event when it comes within the grace, as a chat completion's stream is", async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    const mock = await geminiChat(upstream, channel, model);
    const words = Array.from({ length: 20 }, (_, i) => `w${i}`).join(' ');
    mock.set({ text: words, streamIntervalMs: 50 });
    const key = await apiKey();
    const id = requestId();
    const controller = new AbortController();
    const ai = new GoogleGenAI({ apiKey: key.key, httpOptions: { baseUrl: stack.gateway.url } });
    const stream = await ai.models.generateContentStream({ model, contents: 'hello', config: { abortSignal: controller.signal, httpOptions: { headers: { 'x-request-id': id } } } });
    let read = 0;
    try {
      for await (const _event of stream) {
        // The client leaves after 3 of the 20 events; the rest and the usage follow within a second.
        if (++read === 3) controller.abort();
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    // The mock's usage: "hello" is 2 tokens, the 20 words (69 characters) 18.
    const reported = 2 + Math.ceil(words.length / 4);
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 499, streamed: true, total_tokens: reported });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reported);
    await mock.waitFor((m) => m.stats.inFlight === 0);
  });
});

describe('the Vercel AI SDK with @ai-sdk/google', () => {
  it('generateText, streamText, embed and embedMany through the gateway', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    const embedModel = uniqueModel('embed');
    const mock = await geminiChat(upstream, channel, model);
    await channel(mock, [embedModel]);
    const key = await apiKey();
    const google = createGoogleGenerativeAI({ baseURL: `${stack.gateway.url}/v1beta`, apiKey: key.key });

    const text = await generateText({ model: google(model), prompt: 'Say hello', maxRetries: 0 });
    expect(text.text).toBe('Echo: Say hello');
    expect(text.usage.inputTokens).toBe(3);
    const streamed = streamText({ model: google(model), prompt: 'one two three', maxRetries: 0 });
    expect(await streamed.text).toBe('Echo: one two three');
    expect((await streamed.usage).totalTokens).toBeGreaterThan(0);

    const one = await embed({ model: google.textEmbeddingModel(embedModel), value: 'hello', maxRetries: 0 });
    const many = await embedMany({ model: google.textEmbeddingModel(embedModel), values: ['hello', 'world'], maxRetries: 0 });
    expect(one.embedding).toHaveLength(8);
    expect(many.embeddings[0]).toEqual(one.embedding);
    expect(mock.received.filter((r) => r.model === embedModel).map((r) => r.method)).toEqual(['batchEmbedContents', 'batchEmbedContents']);
    await expect.poll(() => usedQuota(stack, key.id)).toBeGreaterThan(0);
  });
});
