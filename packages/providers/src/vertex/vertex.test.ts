/**
 * A `vertex` channel against a mock Vertex AI with Google's token endpoint beside it: the
 * service account's JWT verified against its public key, a token held and refreshed before it
 * expires, a refused token dropped, the project and region in every path, and each publisher's
 * wire format (Gemini's for Google's models, Messages' for Anthropic's) through the same doors.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { channelKeySecrets, UpstreamError, type ChatChunk, type ChatRequest, type CountTokensRequest, type EmbeddingRequest, type GeminiBatchEmbedRequest, type MessagesRequest, type MessagesStreamEvent } from '@gateway/contracts';
import { newServiceAccount, startMockVertexUpstream, type MockVertexUpstream } from '@gateway/testkit';
import { callUpstream, operationUrl, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { tokenCounterFor } from '../registry.ts';
import { vertex } from './index.ts';

let mock: MockVertexUpstream;
let target: (upstreamModel: string, key?: string) => UpstreamTarget;

beforeAll(async () => {
  mock = await startMockVertexUpstream();
  target = (upstreamModel, key = mock.credential()) => ({ channel: { base_url: `${mock.url}/` }, key, upstreamModel, timeoutMs: 5000 });
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

const chat = (fields: Partial<ChatRequest> = {}) => ({ model: 'asked-for', messages: [{ role: 'user', content: 'Say hello' }], ...fields }) as ChatRequest;
const failureOf = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('expected a failure'), (error: unknown) => error as UpstreamError);
const weatherTool = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } } as const;

describe('a vertex channel', () => {
  it("calls a Gemini model under the credential's project and region with the service account's token", async () => {
    expect(operationUrl(vertex.chat, 'https://us-central1-aiplatform.googleapis.com/v1/', 'gemini-2.5-flash', true))
      .toBe('https://us-central1-aiplatform.googleapis.com/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    const reply = await callUpstream(vertex.chat, target('gemini-2.5-flash'), chat());
    expect(reply).toMatchObject({ object: 'chat.completion', model: 'asked-for', choices: [{ message: { content: 'Echo: Say hello' } }] });
    expect(mock.requests.at(-1)).toMatchObject({ project: mock.project, region: mock.region, publisher: 'google', model: 'gemini-2.5-flash', action: 'generateContent' });
    expect(mock.requests.at(-1)!.token).toBe(mock.oauth.issued.at(-1)!.token);
  });

  it('streams a Gemini tool call as server-sent events, and embeds through :predict with its token counts', async () => {
    const chunks: ChatChunk[] = [];
    for await (const chunk of await streamUpstream(vertex.chat, target('gemini-2.5-flash'), chat({ stream: true, tools: [weatherTool] } as Partial<ChatRequest>))) chunks.push(chunk);
    expect(chunks.flatMap((c) => c.choices.flatMap((choice) => choice.delta.tool_calls ?? [])).map((call) => call.function?.name)).toContain('get_weather');
    const embedded = await callUpstream(vertex.embeddings, target('text-embedding-005'), { model: 'e', input: ['one', 'two texts'], dimensions: 4 } as EmbeddingRequest);
    expect(embedded.data.map((d) => (d.embedding as number[]).length)).toEqual([4, 4]);
    expect(embedded.usage).toEqual({ prompt_tokens: 1 + 3, total_tokens: 4 });
    const refused = await failureOf(callUpstream(vertex.embeddings, target('gemini-embedding-001'), { model: 'e', input: ['one', 'two'] } as EmbeddingRequest));
    expect(refused.status).toBe(400);
    // Gemini's own door: a batch's requests as instances, the task type in Vertex's spelling.
    const batch = await callUpstream(vertex.embedContent, target('text-embedding-005'), { requests: [{ content: { parts: [{ text: 'one' }] }, taskType: 'RETRIEVAL_QUERY', outputDimensionality: 3 }] } as GeminiBatchEmbedRequest);
    expect([batch.embeddings[0]!.values.length, batch.promptTokens]).toEqual([3, 1]);
    expect(mock.requests.at(-1)!.body).toEqual({ instances: [{ content: 'one', task_type: 'RETRIEVAL_QUERY' }], parameters: { outputDimensionality: 3 } });
  });

  it("calls a Claude model through :rawPredict and :streamRawPredict in Messages' format with Vertex's version in the body", async () => {
    const reply = await callUpstream(vertex.chat, target('claude-sonnet-4@20250514'), chat());
    expect(reply.choices[0]!.message.content).toBeTruthy();
    expect(mock.requests.at(-1)).toMatchObject({ publisher: 'anthropic', model: 'claude-sonnet-4@20250514', action: 'rawPredict', body: { anthropic_version: 'vertex-2023-10-16' } });
    expect(mock.requests.at(-1)!.body).not.toHaveProperty('model');
    const events: MessagesStreamEvent[] = [];
    const request = { model: 'asked-for', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], stream: true } as MessagesRequest;
    for await (const event of await streamUpstream(vertex.messages, target('claude-sonnet-4@20250514'), request)) events.push(event);
    expect(events.at(-1)!.type).toBe('message_stop');
    expect(mock.requests.at(-1)).toMatchObject({ action: 'streamRawPredict', body: { stream: true } });
  });

  it("counts a Claude model's tokens at count-tokens:rawPredict, the model in the body; a Gemini model's are left to the worker's estimate", async () => {
    const request = { model: 'asked-for', system: 'Be brief.', messages: [{ role: 'user', content: 'How many tokens is this?' }] } as CountTokensRequest;
    const counter = tokenCounterFor('vertex', 'anthropic/claude-sonnet-4@20250514')!;
    expect(await callUpstream(counter, target('anthropic/claude-sonnet-4@20250514'), request)).toEqual({ input_tokens: Math.ceil('Be brief.How many tokens is this?'.length / 4) });
    expect(mock.requests.at(-1)).toMatchObject({
      project: mock.project, region: mock.region, publisher: 'anthropic', model: 'count-tokens', action: 'rawPredict', token: mock.oauth.issued.at(-1)!.token,
      body: { model: 'claude-sonnet-4@20250514', anthropic_version: 'vertex-2023-10-16', system: 'Be brief.' },
    });
    expect(tokenCounterFor('vertex', 'gemini-2.5-flash')).toBeUndefined();

    // The mock refuses a count as Vertex does: a token it never issued, a body without its model.
    const count = (token: string, body: unknown) => fetch(`${mock.url}/v1/projects/${mock.project}/locations/${mock.region}/publishers/anthropic/models/count-tokens:rawPredict`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    expect((await count('not-a-token', { model: 'claude-sonnet-4@20250514', messages: request.messages })).status).toBe(401);
    expect((await count(mock.oauth.issued.at(-1)!.token, { messages: request.messages })).status).toBe(400);
  });

  it('holds one token while it is fresh, and fetches the next before the last expires', async () => {
    const shortLived = await startMockVertexUpstream({ tokenLifetimeSeconds: 4 });
    try {
      const at: UpstreamTarget = { channel: { base_url: shortLived.url }, key: shortLived.credential(), upstreamModel: 'gemini-2.5-flash', timeoutMs: 5000 };
      // Requests at once share one token request.
      await Promise.all([1, 2, 3].map(() => callUpstream(vertex.chat, at, chat())));
      await callUpstream(vertex.chat, at, chat());
      expect(shortLived.oauth.issued).toHaveLength(1);
      // Past half its life (2 s) it is refreshed, while it still holds: Vertex never refuses one.
      await new Promise((resolve) => setTimeout(resolve, 2100));
      await callUpstream(vertex.chat, at, chat());
      expect(shortLived.oauth.issued).toHaveLength(2);
      expect(shortLived.requests.map((r) => r.token)).toEqual([...Array(4).fill(shortLived.oauth.issued[0]!.token), shortLived.oauth.issued[1]!.token]);
    } finally {
      await shortLived.close();
    }
  });

  it("drops a token Vertex refuses, and the next attempt fetches another; a revoked account's token request is the channel's 401", async () => {
    const account = newServiceAccount();
    const other = await startMockVertexUpstream({ accounts: [account] });
    try {
      const key = other.credential();
      const at = (model: string): UpstreamTarget => ({ channel: { base_url: other.url }, key, upstreamModel: model, timeoutMs: 5000 });
      await callUpstream(vertex.chat, at('gemini-2.5-flash'), chat());
      // The held token no longer works (Vertex answers 401 UNAUTHENTICATED): dropped.
      other.oauth.issued.at(-1)!.expiresAt = 0;
      const refused = await failureOf(callUpstream(vertex.chat, at('gemini-2.5-flash'), chat()));
      expect([refused.status, (refused.body as { error: { status: string } }).error.status]).toEqual([401, 'UNAUTHENTICATED']);
      await callUpstream(vertex.chat, at('gemini-2.5-flash'), chat());
      expect(other.oauth.issued).toHaveLength(2);

      other.oauth.revoke(account.clientEmail);
      const revoked = await failureOf(callUpstream(vertex.chat, at('gemini-2.5-flash'), chat()));
      expect(revoked.status).toBe(401);
      const again = await failureOf(callUpstream(vertex.chat, at('claude-sonnet-4'), chat()));
      expect([again.status, again.message]).toEqual([401, "Google refused the service account's token request (invalid_grant)"]);
      for (const secret of channelKeySecrets(key).slice(1)) expect(again.message).not.toContain(secret);
    } finally {
      await other.close();
    }
  });

  it("refuses a key signed by another account, a key it cannot read, and reads a project not the account's as its 401", async () => {
    const stranger = await failureOf(callUpstream(vertex.chat, target('gemini-2.5-flash', mock.credential(newServiceAccount())), chat()));
    expect(stranger.status).toBe(401);
    const unreadable = await failureOf(callUpstream(vertex.chat, target('gemini-2.5-flash', '{"region": "us-central1"}'), chat()));
    expect([unreadable.status, unreadable.message]).toEqual([401, expect.stringContaining('client_email')]);
    const elsewhere = JSON.stringify({ ...JSON.parse(mock.credential()), project: 'someone-elses' });
    const denied = await failureOf(callUpstream(vertex.chat, target('gemini-2.5-flash', elsewhere), chat()));
    expect([denied.status, (denied.body as { error: { status: string } }).error.status]).toEqual([401, 'PERMISSION_DENIED']);
  });

  it('waits out a 429 RESOURCE_EXHAUSTED as any 429', async () => {
    mock.next({ status: 429 });
    const throttled = await failureOf(callUpstream(vertex.chat, target('gemini-2.5-flash'), chat()));
    expect([throttled.kind, throttled.status]).toEqual(['http', 429]);
  });
});
