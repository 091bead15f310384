/**
 * The model lists through the official SDKs: `openai`'s `models.list()` / `models.retrieve()`
 * and `@google/genai`'s `models.list()` / `models.get()`, against real gateway and admin-worker
 * processes. Each key sees only what it may use.
 */
import { describe, expect } from 'vitest';
import OpenAI, { NotFoundError, AuthenticationError } from 'openai';
import { ApiError, GoogleGenAI } from '@google/genai';
import { GoogleGenAI as GoogleGenAI2 } from 'google-genai-2';
import type { Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest();

let key: string;

// Gemini's door serves every model (an openai channel's chat through generateContent), so its list names them all, aliases included.
const every = ['models/davinci', 'models/gpt-a', 'models/gpt-b', 'models/gpt-tagged', 'models/tts-1', 'models/tts-2', 'models/tts-3'];
const methods = ['generateContent', 'streamGenerateContent', 'embedContent', 'batchEmbedContents'];


const openai = (stack: Stack, apiKey: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey, maxRetries: 0 });
/** The SDK's current major, which calls `/v1` by default. */
const gemini = (stack: Stack, apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: stack.gateway.url } });

async function openaiIds(stack: Stack, apiKey: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const model of openai(stack, apiKey).models.list()) ids.push(model.id);
  return ids;
}

async function geminiNames(stack: Stack, apiKey: string, pageSize?: number): Promise<string[]> {
  const names: string[] = [];
  for await (const model of await gemini(stack, apiKey).models.list({ config: { pageSize } })) names.push(model.name!);
  return names;
}

// One set of channels for the whole file: the tests read the lists the set makes as a whole.
it.beforeAll(async ({ stack }) => {
  const base = { key: 'sk-upstream', base_url: 'http://127.0.0.1:9' };
  await stack.adminData('POST', '/api/channel/', { ...base, name: 'text', type: 'openai', models: ['gpt-a', 'gpt-b'], model_mapping: { davinci: 'gpt-a' } });
  await stack.adminData('POST', '/api/channel/', { ...base, name: 'text-off', type: 'openai', models: ['gpt-off'], status: 2 });
  await stack.adminData('POST', '/api/channel/', { ...base, name: 'text-vip', type: 'openai', models: ['gpt-vip'], group: 'vip' });
  await stack.adminData('POST', '/api/channel/', { ...base, name: 'text-tagged', type: 'openai', models: ['gpt-tagged'], tag: 'night' });
  for (const model of ['tts-1', 'tts-2', 'tts-3']) {
    await stack.adminData('POST', '/api/channel/', { ...base, name: model, type: 'gemini', models: [model] });
  }
  key = (await stack.adminData('POST', '/api/token/', { name: 'everything', unlimited_quota: true })).key;
});

describe('GET /v1/models through the openai SDK', () => {
  it("lists the enabled channels' models in the key's group, aliases included, in OpenAI's shape, each with what serves it", async ({ stack }) => {
    // Every channel type is reachable on the OpenAI routes (Gemini through embeddings).
    expect(await openaiIds(stack, key)).toEqual(['davinci', 'gpt-a', 'gpt-b', 'gpt-tagged', 'tts-1', 'tts-2', 'tts-3']);
    const page = await openai(stack, key).models.list();
    expect(page.data[0]).toEqual({ id: 'davinci', object: 'model', created: expect.any(Number), owned_by: 'openai' });
    expect(page.data.find((m) => m.id === 'tts-1')?.owned_by).toBe('gemini');
  });

  it('retrieves one model, and answers 404 model_not_found for one the key cannot use', async ({ stack }) => {
    expect(await openai(stack, key).models.retrieve('gpt-b')).toMatchObject({ id: 'gpt-b', object: 'model' });
    for (const missing of ['gpt-off', 'gpt-vip', 'no-such-model']) {
      const error = await openai(stack, key).models.retrieve(missing).catch((e: unknown) => e);
      expect(error, missing).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).code).toBe('model_not_found');
    }
  });

  it("follows the key's models restriction and the user's group", async ({ stack, apiKey }) => {
    const { key: limited } = await apiKey({ models: ['gpt-b', 'gpt-vip'] });
    expect(await openaiIds(stack, limited)).toEqual(['gpt-b']);
    await expect(openai(stack, limited).models.retrieve('gpt-a')).rejects.toBeInstanceOf(NotFoundError);

    const vip = await stack.adminData('POST', '/api/user/', { username: 'vip-user', password: 'vip-password', group: 'vip' });
    expect(await openaiIds(stack, (await apiKey({ user_id: vip.id })).key)).toEqual(['gpt-vip']);
  });

  it('drops a channel disabled by tag from the very next list', async ({ stack }) => {
    expect(await stack.adminData('POST', '/api/channel/tag/disabled', { tag: 'night' })).toEqual({ count: 1 });
    expect(await openaiIds(stack, key)).not.toContain('gpt-tagged');
    await stack.adminData('POST', '/api/channel/tag/enabled', { tag: 'night' });
    expect(await openaiIds(stack, key)).toContain('gpt-tagged');
  });

  it('refuses a missing or unknown key with 401 in OpenAI format', async ({ stack }) => {
    await expect(openai(stack, 'sk-not-a-key').models.list()).rejects.toBeInstanceOf(AuthenticationError);
    const response = await fetch(`${stack.gateway.url}/v1/models`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_api_key' } });
  });
});

describe('GET /v1beta/models through the @google/genai SDK', () => {
  it("lists every model the key may use in Gemini's shape, page by page, whatever its channel's type", async ({ stack }) => {
    expect(await geminiNames(stack, key)).toEqual(every);
    expect(await geminiNames(stack, key, 2)).toEqual(every);
    const raw = await fetch(`${stack.gateway.url}/v1beta/models?pageSize=2&pageToken=2`, { headers: { 'x-goog-api-key': key } });
    expect(await raw.json()).toEqual({
      models: [
        { name: 'models/gpt-b', displayName: 'gpt-b', supportedGenerationMethods: methods },
        { name: 'models/gpt-tagged', displayName: 'gpt-tagged', supportedGenerationMethods: methods },
      ],
      nextPageToken: '4',
    });
  });

  it('gets one model, and answers 404 NOT_FOUND for one the key cannot use', async ({ stack, apiKey }) => {
    expect(await gemini(stack, key).models.get({ model: 'tts-2' })).toMatchObject({ name: 'models/tts-2', displayName: 'tts-2' });
    expect(await gemini(stack, key).models.get({ model: 'models/tts-3' })).toMatchObject({ name: 'models/tts-3' });
    expect(await gemini(stack, key).models.get({ model: 'gpt-a' })).toMatchObject({ name: 'models/gpt-a' });
    const { key: limited } = await apiKey({ models: ['tts-1'] });
    expect(await geminiNames(stack, limited)).toEqual(['models/tts-1']);
    for (const [asKey, missing] of [[key, 'gpt-off'], [key, 'gpt-vip'], [limited, 'tts-2']] as const) {
      const error = await gemini(stack, asKey).models.get({ model: missing }).catch((e: unknown) => e);
      expect(error, missing).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(404);
      expect(JSON.parse((error as ApiError).message)).toMatchObject({ error: { code: 404, status: 'NOT_FOUND' } });
    }
  });

  it('refuses a bad key with 401 UNAUTHENTICATED, and a key in the query string', async ({ stack }) => {
    const error = await gemini(stack, 'sk-not-a-key').models.get({ model: 'tts-1' }).catch((e: unknown) => e);
    expect((error as ApiError).status).toBe(401);
    const query = await fetch(`${stack.gateway.url}/v1beta/models?key=${key}`);
    expect(query.status).toBe(401);
    expect(await query.json()).toMatchObject({ error: { status: 'UNAUTHENTICATED' } });
  });
});

describe('GET /v1beta/models through @google/genai 2.x (the major before, which calls /v1beta)', () => {
  it('lists and gets models in Gemini\'s shape', async ({ stack }) => {
    const old = new GoogleGenAI2({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url } });
    const names: string[] = [];
    for await (const model of await old.models.list()) names.push(model.name!);
    expect(names).toEqual(every);
    expect((await old.models.get({ model: 'tts-2' })).name).toBe('models/tts-2');
  });

  it('the same lists answer on /v1 (3.x) and /v1beta (2.x), and /v1/models still answers OpenAI clients in OpenAI\'s shape', async ({ stack }) => {
    const viaV1 = await fetch(`${stack.gateway.url}/v1/models`, { headers: { 'x-goog-api-key': key } }).then((r) => r.json() as Promise<any>);
    const viaV1beta = await fetch(`${stack.gateway.url}/v1beta/models`, { headers: { 'x-goog-api-key': key } }).then((r) => r.json() as Promise<any>);
    expect(viaV1).toEqual(viaV1beta);
    const openaiShape = await fetch(`${stack.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.json() as Promise<any>);
    expect(openaiShape.object).toBe('list');
    // A Gemini client's unknown model: Gemini's error shape on /v1 too.
    const missing = await fetch(`${stack.gateway.url}/v1/models/no-such`, { headers: { 'x-goog-api-key': key } });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error).toMatchObject({ code: 404, status: 'NOT_FOUND' });
  });
});
