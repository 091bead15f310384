/**
 * Azure OpenAI channels end to end: real Redis, admin-worker, completion-worker, audio-worker
 * and gateway processes, a mock Azure OpenAI resource over real HTTP that checks deployment,
 * api-version and key as Azure does, with Microsoft Entra ID's token endpoint beside it (a service
 * principal's client-credentials grant, short-lived tokens, expired and revoked ones refused as
 * Azure does), channels made through the management API, and the `openai` SDK as the client with
 * nothing changed but the base URL and key.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { ChannelStatus } from '@gateway/contracts';
import { readChatStream, usedQuota, weatherTool } from '@gateway/testkit/chat-client';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000', CHANNEL_AUTH_FAILURES_BEFORE_DISABLE: '2' },
  channelDefaults: { timeout_ms: 5000 },
}).extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 }));

let seq = 0;
const uniqueModel = () => `azure-model-${++seq}`;
const hi = [{ role: 'user' as const, content: 'hi' }];

describe('an azure channel through the openai SDK', () => {
  it("answers chat whole from the deployment its model maps to, with the resource's key and API version, and never shows the key", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ deployments: ['gpt-4o-prod'] }, { text: 'Hello from Azure' });
    const model = uniqueModel();
    const credential = JSON.stringify({ api_key: mock.apiKey, api_version: '2025-04-01-preview' });
    const made = await channel(mock, ['gpt-4o-prod'], { model_mapping: { [model]: 'gpt-4o-prod' }, key: credential });
    const key = await apiKey();

    const reply = await client(key.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'Say hello' }] });
    expect(reply.model).toBe(model);
    expect(reply.choices[0]!.message.content).toBe('Hello from Azure');
    expect(mock.requests.at(-1)).toMatchObject({ deployment: 'gpt-4o-prod', operation: 'chat/completions', apiVersion: '2025-04-01-preview', apiKey: mock.apiKey });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
    // The management API shows a mask of the structured credential, never the key inside it.
    const shown = JSON.stringify((await stack.admin('GET', `/api/channel/${made.id}`)).body);
    expect(shown).not.toContain(mock.apiKey);
  });

  it('streams a tool call, with usage last', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();

    const stream = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weatherTool], stream: true, stream_options: { include_usage: true },
    });
    const { toolName, toolArguments, finish, usage } = await readChatStream(stream);
    expect([toolName, JSON.parse(toolArguments), finish]).toEqual(['get_weather', { city: 'Paris' }, 'tool_calls']);
    expect(mock.requests.at(-1)).toMatchObject({ deployment: model, body: { stream: true } });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage!.total_tokens);
  });

  it('embeds, and speaks through the audio worker', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ deployments: ['embed-prod', 'tts-prod'] });
    const [embedder, speaker] = [uniqueModel(), uniqueModel()];
    await channel(mock, ['embed-prod', 'tts-prod'], { model_mapping: { [embedder]: 'embed-prod', [speaker]: 'tts-prod' } });
    const { key } = await apiKey();

    const embedded = await client(key).embeddings.create({ model: embedder, input: ['first text', 'second'], encoding_format: 'float' });
    expect(embedded.data).toHaveLength(2);
    expect(embedded.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(embedded.model).toBe(embedder);

    const speech = await client(key).audio.speech.create({ model: speaker, input: 'Hello from Azure', voice: 'alloy', response_format: 'mp3' });
    expect(speech.headers.get('content-type')).toBe('audio/mpeg');
    expect((await speech.arrayBuffer()).byteLength).toBeGreaterThan(100);
    expect(mock.requests.map((r) => [r.deployment, r.operation])).toEqual([['embed-prod', 'embeddings'], ['tts-prod', 'audio/speech']]);
  });

  it('auto-disables an azure channel whose resource refuses its key twice in a row, the requests served by another channel', async ({ stack, upstream, channel, apiKey, client }) => {
    const [refusing, steady] = [await upstream.azure(), await upstream.azure()];
    const model = uniqueModel();
    const bad = await channel(refusing, [model], { key: 'not-the-resource-key', priority: 10 });
    await channel(steady, [model]);
    const openai = client((await apiKey()).key);

    for (let i = 0; i < 2; i++) await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(ChannelStatus.autoDisabled);
    expect(stored.status_reason).toMatch(/401/);
    await openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    expect([refusing.requests.length, steady.requests.length]).toEqual([2, 3]);
  });

  it("answers chat with a service principal's Entra ID token, one fetched for requests at once, and never shows its secret or token", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ deployments: ['gpt-4o-prod'] }, { text: 'Hello with Entra ID' });
    const model = uniqueModel();
    const made = await channel(mock, ['gpt-4o-prod'], { model_mapping: { [model]: 'gpt-4o-prod' }, key: mock.credential() });
    const openai = client((await apiKey()).key);

    const replies = await Promise.all(Array.from({ length: 4 }, () => openai.chat.completions.create({ model, messages: hi })));
    expect(replies.map((reply) => reply.choices[0]!.message.content)).toEqual(Array(4).fill('Hello with Entra ID'));
    expect(mock.entra.tokenRequests).toBe(1);
    const token = mock.entra.issued[0]!.token;
    expect(mock.requests.map((r) => [r.deployment, r.apiKey, r.authorization])).toEqual(Array(4).fill(['gpt-4o-prod', undefined, `Bearer ${token}`]));
    const shown = JSON.stringify([(await stack.admin('GET', `/api/channel/${made.id}`)).body, (await stack.admin('GET', '/api/channel/?p=0&page_size=100')).body]);
    const logged = [stack.gateway, ...stack.services].flatMap((service) => service.output).join('\n');
    for (const secret of [mock.principal.clientSecret, token]) {
      expect(shown).not.toContain(secret);
      expect(logged).not.toContain(secret);
    }
  });

  it('refreshes the token before it expires: requests spread past its expiry all succeed, and Azure never sees an expired one', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.azure({ tokenLifetimeSeconds: 4 });
    const model = uniqueModel();
    await channel(mock, [model], { key: mock.credential() });
    const openai = client((await apiKey()).key);

    // Requests go on, each one answered, until the first token has expired.
    await expect.poll(async () => {
      await openai.chat.completions.create({ model, messages: hi });
      return Date.now() > mock.entra.issued[0]!.expiresAt + 250;
    }, { timeout: 15_000, interval: 250 }).toBe(true);
    await openai.chat.completions.create({ model, messages: hi });
    expect(mock.entra.issued.length).toBeGreaterThanOrEqual(2);
    expect(mock.requests.at(-1)!.at).toBeGreaterThan(mock.entra.issued[0]!.expiresAt);
    // Each next token was fetched while the one before still held, not once it had expired.
    for (const [i, token] of mock.entra.issued.slice(1).entries()) expect(token.issuedAt).toBeLessThan(mock.entra.issued[i]!.expiresAt - 500);
    const expiryOf = (authorization: string | undefined) => mock.entra.issued.find((issued) => `Bearer ${issued.token}` === authorization)?.expiresAt ?? 0;
    expect(mock.requests.filter((r) => expiryOf(r.authorization) <= r.at)).toEqual([]);
    expect(mock.completed).toBe(mock.requests.length);
  });

  it('drops a token Azure refuses (revoked), the request served by another channel, and fetches another for the next', async ({ stack, upstream, channel, apiKey, client }) => {
    const [entra, steady] = [await upstream.azure(), await upstream.azure()];
    const model = uniqueModel();
    const principal = await channel(entra, [model], { key: entra.credential(), priority: 10 });
    await channel(steady, [model]);
    const openai = client((await apiKey()).key);
    await openai.chat.completions.create({ model, messages: hi });
    // Its answer is charged (the channel working resets its failures) before the token is revoked.
    await expect.poll(async () => (await stack.adminData('GET', `/api/channel/${principal.id}`)).used_quota).toBeGreaterThan(0);

    const first = entra.entra.issued[0]!.token;
    entra.entra.revoke(first);
    await openai.chat.completions.create({ model, messages: hi });
    expect(steady.requests).toHaveLength(1);
    await openai.chat.completions.create({ model, messages: hi });
    expect(entra.entra.issued).toHaveLength(2);
    const second = entra.entra.issued[1]!.token;
    expect(entra.requests.map((r) => r.authorization)).toEqual([`Bearer ${first}`, `Bearer ${first}`, `Bearer ${second}`]);
    expect([steady.requests.length, entra.completed]).toEqual([1, 2]);
    expect((await stack.adminData('GET', `/api/channel/${principal.id}`)).status).toBe(ChannelStatus.enabled);
  });

  it("fails a service principal whose secret Entra ID refuses as a wrong key: a clear error, and auto-disabled after two 401s", async ({ stack, upstream, channel, apiKey, client }) => {
    const [refusing, steady] = [await upstream.azure(), await upstream.azure()];
    const [alone, shared] = [uniqueModel(), uniqueModel()];
    const wrongSecret = 'wrong-secret-0123456789abcdefghij';
    const key = refusing.credential(undefined, { client_secret: wrongSecret });
    await channel(refusing, [alone], { key });
    const openai = client((await apiKey()).key);

    const refused = await openai.chat.completions.create({ model: alone, messages: hi }).then(() => expect.unreachable('expected a failure'), (error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
    expect([refused.status, refused.message]).toEqual([502, expect.stringContaining("the upstream refused the channel's credentials")]);

    const bad = await channel(refusing, [shared], { key, priority: 10 });
    await channel(steady, [shared]);
    for (let i = 0; i < 2; i++) await openai.chat.completions.create({ model: shared, messages: hi });
    const stored = (await stack.admin('GET', `/api/channel/${bad.id}`)).body.data;
    expect(stored.status).toBe(ChannelStatus.autoDisabled);
    expect(stored.status_reason).toMatch(/401/);
    await openai.chat.completions.create({ model: shared, messages: hi });
    // Entra ID was asked each time, never a token held for a refusal; the resource never called.
    expect([refusing.entra.tokenRequests, refusing.entra.issued.length, refusing.requests.length, steady.requests.length]).toEqual([3, 0, 0, 3]);
    const written = [...[stack.gateway, ...stack.services].flatMap((service) => service.output), JSON.stringify(stored), refused.message].join('\n');
    expect(written).not.toContain(wrongSecret);
  });
});
