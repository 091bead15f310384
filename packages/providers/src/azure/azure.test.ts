/**
 * An `azure` channel against a mock Azure OpenAI resource that refuses what Azure refuses: the
 * deployment and api-version in the URL, the key in `api-key` (or an Entra ID token as a bearer),
 * or a service principal's token fetched from Entra ID beside it), its failures read as OpenAI's
 * (a wrong key a 401, a throttled call a 429 with its wait).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { channelKeySecrets, UpstreamError, type ChatChunk, type ChatRequest, type EmbeddingRequest } from '@gateway/contracts';
import { startMockAzureUpstream, type MockAzureUpstream } from '@gateway/testkit';
import { callUpstream, operationUrl, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { AZURE_API_VERSION } from './credential.ts';
import { azure } from './index.ts';

const ENTRA_TOKEN = 'eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra-token.signature';

let mock: MockAzureUpstream;
let target: UpstreamTarget;

beforeAll(async () => {
  mock = await startMockAzureUpstream({ deployments: ['gpt-4o-prod', 'embed-prod'], entraToken: ENTRA_TOKEN });
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  target = { channel: { base_url: `${mock.url}/` }, key: mock.apiKey, upstreamModel: 'gpt-4o-prod', timeoutMs: 2000 };
});

const chat = (fields: Partial<ChatRequest> = {}) => ({ model: 'asked-for', messages: [{ role: 'user', content: 'Say hello' }], ...fields }) as ChatRequest;
const failureOf = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('expected a failure'), (error: unknown) => error as UpstreamError);

describe('an azure channel', () => {
  it("calls the deployment with the resource's key and the GA api-version, from a base_url written with or without /openai", async () => {
    expect(operationUrl(azure.chat, 'https://res.openai.azure.com/openai/', 'gpt 4o', false)).toBe('https://res.openai.azure.com/openai/deployments/gpt%204o/chat/completions');
    const reply = await callUpstream(azure.chat, target, chat());
    expect(reply).toMatchObject({ object: 'chat.completion', model: 'asked-for' });
    expect(mock.requests[0]).toMatchObject({ deployment: 'gpt-4o-prod', operation: 'chat/completions', apiVersion: AZURE_API_VERSION, apiKey: mock.apiKey, authorization: undefined });
  });

  it('streams chat as server-sent events to its [DONE]', async () => {
    const events: ChatChunk[] = [];
    for await (const event of await streamUpstream(azure.chat, target, chat({ stream: true }))) events.push(event);
    expect(events.map((e) => e.choices[0]?.delta?.content ?? '').join('')).not.toBe('');
    expect(mock.requests[0]).toMatchObject({ operation: 'chat/completions', body: { stream: true } });
  });

  it('takes a structured credential: its API version, or an Entra ID token as a bearer', async () => {
    await callUpstream(azure.chat, { ...target, key: JSON.stringify({ api_key: mock.apiKey, api_version: '2025-04-01-preview' }) }, chat());
    await callUpstream(azure.embeddings, { ...target, upstreamModel: 'embed-prod', key: JSON.stringify({ entra_token: ENTRA_TOKEN }) }, { model: 'e', input: 'hi' } as EmbeddingRequest);
    expect(mock.requests[0]).toMatchObject({ apiVersion: '2025-04-01-preview', apiKey: mock.apiKey });
    expect(mock.requests[1]).toMatchObject({ operation: 'embeddings', apiVersion: AZURE_API_VERSION, apiKey: undefined, authorization: `Bearer ${ENTRA_TOKEN}` });
  });

  it("reads Azure's refusals as OpenAI's: a wrong key a 401, an unknown deployment a 404, an unknown version a 400, a throttled call a 429 with its wait", async () => {
    expect(await failureOf(callUpstream(azure.chat, { ...target, key: 'wrong-key' }, chat()))).toMatchObject({
      kind: 'http', status: 401, message: expect.stringContaining('Access denied due to invalid subscription key'),
    });
    expect(await failureOf(callUpstream(azure.chat, { ...target, upstreamModel: 'gpt-5-nowhere' }, chat()))).toMatchObject({ status: 404, body: { error: { code: 'DeploymentNotFound' } } });
    expect(await failureOf(callUpstream(azure.chat, { ...target, key: JSON.stringify({ api_key: mock.apiKey, api_version: '1999-01-01' }) }, chat()))).toMatchObject({ status: 400 });
    mock.next({ status: 429, retryAfter: 7 });
    expect(await failureOf(callUpstream(azure.chat, target, chat()))).toMatchObject({ kind: 'http', status: 429, retryAfter: 7 });
  });

  it("sends a service principal's token as a bearer; a token Azure refuses is dropped and the next attempt fetches another", async () => {
    const key = mock.credential();
    await callUpstream(azure.chat, { ...target, key }, chat());
    const first = mock.entra.issued.at(-1)!.token;
    expect(mock.requests.at(-1)).toMatchObject({ apiVersion: AZURE_API_VERSION, apiKey: undefined, authorization: `Bearer ${first}` });
    mock.entra.revoke(first);
    const refused = await failureOf(callUpstream(azure.chat, { ...target, key }, chat()));
    expect([refused.status, refused.message]).toEqual([401, expect.stringContaining('Access token is missing, invalid')]);
    await callUpstream(azure.chat, { ...target, key }, chat());
    const second = mock.entra.issued.at(-1)!.token;
    expect(second).not.toBe(first);
    expect(mock.requests.map((r) => r.authorization)).toEqual([`Bearer ${first}`, `Bearer ${first}`, `Bearer ${second}`]);
    // Its secret is redacted from what an upstream answers, as any structured credential's; its ids and authority are not secrets.
    expect(channelKeySecrets(key)).toEqual([key, mock.principal.clientSecret]);
  });

  it("fails the channel as a 401 without calling the resource, for a service principal whose secret Entra ID refuses", async () => {
    const key = mock.credential(undefined, { client_secret: 'wrong-secret-0123456789abcdef' });
    expect(await failureOf(callUpstream(azure.chat, { ...target, key }, chat()))).toMatchObject({
      kind: 'http', status: 401, message: "Microsoft Entra ID refused the service principal's token request (invalid_client, AADSTS7000215)",
    });
    expect(mock.requests).toHaveLength(0);
  });

  it('fails the channel as a 401 without calling, for a credential it cannot read', async () => {
    const principal = ['"tenant_id":"t","client_id":"c","client_secret":"s"'];
    for (const key of [
      '{"api_version":"2024-10-21"}', '{"api_key":"a","entra_token":"b"}', '{"api_key":7}', '{broken',
      '{"client_id":"c","client_secret":"s"}', `{"api_key":"a",${principal}}`, `{${principal},"authority_host":"login.microsoftonline.com/x"}`,
    ]) {
      expect(await failureOf(callUpstream(azure.chat, { ...target, key }, chat()))).toMatchObject({ kind: 'http', status: 401, message: expect.stringMatching(/\(read as the azure provider's credential\)$/) });
    }
    expect(mock.requests).toHaveLength(0);
  });
});
