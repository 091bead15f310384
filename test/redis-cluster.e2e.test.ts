/**
 * The gateway on a real Redis Cluster (3 masters, 3 replicas, from the test kit): every process
 * started with REDIS_CLUSTER_NODES and no REDIS_URL at all, so nothing can fall back to a single
 * Redis. Management, completions whole and streamed through the `openai` SDK, speech through
 * `@google/genai`, and a burst against a channel with max_concurrency.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import {
  mockSpeech, spawnRedisCluster, startMockGeminiUpstream, startMockOpenAIUpstream, startStack,
  type MockGeminiUpstream, type MockOpenAIUpstream, type Stack, type TestRedisCluster,
} from '@gateway/testkit';

let cluster: TestRedisCluster;
let stack: Stack;
let openaiUpstream: MockOpenAIUpstream;
let geminiUpstream: MockGeminiUpstream;
let key: string;

beforeAll(async () => {
  cluster = await spawnRedisCluster();
  [openaiUpstream, geminiUpstream] = await Promise.all([startMockOpenAIUpstream(), startMockGeminiUpstream()]);
  stack = await startStack({ cluster, workers: ['completion-worker', 'audio-worker'], env: { REQUEST_TIMEOUT_MS: '20000' } });
  const admin = async (path: string, body: unknown) => {
    const answer = await stack.admin('POST', path, body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body.data;
  };
  await admin('/api/channel/', { name: 'text', type: 'openai', key: 'sk-upstream', base_url: openaiUpstream.url, models: ['text-model'] });
  await admin('/api/channel/', { name: 'narrow', type: 'openai', key: 'sk-upstream', base_url: openaiUpstream.url, models: ['narrow-model'], max_concurrency: 4 });
  await admin('/api/channel/', { name: 'speech', type: 'gemini', key: geminiUpstream.apiKey, base_url: geminiUpstream.url, models: ['tts-model'] });
  key = (await admin('/api/token/', { name: 'cluster', unlimited_quota: true })).key;
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await Promise.all([openaiUpstream?.close(), geminiUpstream?.close()]);
  await cluster?.close();
});

const openai = () => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });

describe('the gateway on a Redis Cluster', () => {
  it('runs the management API: users, keys and channels written and read back, a user updated', async () => {
    const created = await stack.admin('POST', '/api/user/', { username: 'cluster-user', password: 'cluster-password' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const updated = await stack.admin('PUT', '/api/user/', { id: created.body.data.id, display_name: 'On a cluster' });
    expect(updated.status).toBe(200);
    expect((await stack.admin('GET', `/api/user/${created.body.data.id}`)).body.data).toMatchObject({ username: 'cluster-user', display_name: 'On a cluster' });
    const channels = (await stack.admin('GET', '/api/channel/')).body.data;
    expect((channels.items ?? channels).map((c: { name: string }) => c.name).sort()).toEqual(['narrow', 'speech', 'text']);
    const login = await fetch(`${stack.gateway.url}/api/user/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'cluster-user', password: 'cluster-password' }),
    });
    expect(login.status).toBe(200);
  });

  it('answers completions, whole and streamed, and charges them', async () => {
    const whole = await openai().completions.create({ model: 'text-model', prompt: 'Say this is a test' });
    expect(whole.choices[0]?.text).toBe('This is a mock completion.');
    const chunks: string[] = [];
    for await (const chunk of await openai().completions.create({ model: 'text-model', prompt: 'Say this is a test', stream: true })) {
      chunks.push(chunk.choices[0]?.text ?? '');
    }
    expect(chunks.join('')).toBe('This is a mock completion.');
    await expect.poll(async () => (await stack.admin('GET', '/api/token/')).body.data.items?.[0]?.used_quota ?? -1).toBeGreaterThan(0);
  });

  it('generates speech through the audio worker', async () => {
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 20_000 } });
    const text = 'Say cheerfully: hello from a cluster';
    const reply = await genai.models.generateContent({
      model: 'tts-model',
      contents: [{ role: 'user', parts: [{ text }] }],
      config: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
    });
    const pcm = Buffer.from(reply.candidates?.[0]?.content?.parts?.[0]?.inlineData?.data ?? '', 'base64');
    expect(pcm.length).toBe(mockSpeech(text).pcmBytes);
  });

  it('holds a burst to the channel\'s max_concurrency, every request answered', async () => {
    openaiUpstream.setBehaviour({ delayMs: 50 });
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => openai().completions.create({ model: 'narrow-model', prompt: 'x' }).then(() => 'ok', (e: Error) => e.message)));
      expect(answers.filter((a) => a === 'ok')).toHaveLength(40);
      expect(openaiUpstream.maxInFlight).toBeLessThanOrEqual(4);
    } finally {
      openaiUpstream.setBehaviour({});
    }
  }, 30_000);
});
