/**
 * The provider seam as a cloud provider uses it: `prepare` sees the whole request it is about to
 * send and may sign it, asynchronously, with a structured credential; what it prepared is what
 * the upstream receives, byte for byte; a credential it cannot read fails the channel (a 401)
 * before anything is sent; and no secret of a structured credential comes back to a client.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UpstreamError, type ChatChunk, type ChatRequest } from '@gateway/contracts';
import { callUpstream, streamUpstream } from './call-upstream.ts';
import { badCredential, credentialField, structuredCredential } from './channel-credential.ts';
import { chat } from './openai/chat.ts';
import type { OutgoingRequest, ProviderApi, ProviderOperation, UpstreamTarget } from './provider.ts';

interface Received {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const SECRET = 'a-signing-secret-long-enough-to-hide';

/** What the upstream checks: the signature over method, path and body, as a signing provider computes it. */
const signatureOf = (method: string, path: string, body: string, secret: string) => createHmac('sha256', secret).update(`${method}\n${path}\n${body}`).digest('hex');

/** A provider that signs each request with its credential's secret, after an await (as a token fetch would). */
const signingApi: ProviderApi = {
  baseUrl: (base) => base,
  async prepare(request: OutgoingRequest, key: string): Promise<OutgoingRequest> {
    const credential = structuredCredential(key, 'signing') ?? {};
    const secret = credentialField(credential, 'secret', 'signing');
    const region = credentialField(credential, 'region', 'signing');
    if (!secret || !region) throw badCredential('signing', 'lacks "secret" or "region"');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const url = new URL(request.url);
    url.searchParams.set('region', region);
    const body = Buffer.from(String(request.body));
    return {
      ...request,
      url: url.toString(),
      headers: { ...request.headers, 'x-signature': signatureOf(request.method, url.pathname + url.search, body.toString(), secret) },
      body,
    };
  },
  streamEncoding: 'sse',
  endpoints: { chat: (model) => `/models/${model}/chat` },
};
const signedChat: ProviderOperation<ChatRequest, unknown, ChatChunk> = { api: signingApi, endpoint: signingApi.endpoints.chat!, mapping: chat };

let server: Server;
let url: string;
let received: Received[] = [];
/** What the upstream answers a signed request with: text that may reflect what it was sent. */
let replyText = 'hello';

beforeAll(async () => {
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString();
      received.push({ method: req.method!, path: req.url!, headers: req.headers, body });
      if (req.headers['x-signature'] !== signatureOf(req.method!, req.url!, body, SECRET)) {
        return void res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'signature does not match' } }));
      }
      const message = { role: 'assistant', content: replyText };
      if (JSON.parse(body).stream !== true) {
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'c1', choices: [{ index: 0, message, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c1', choices: [{ index: 0, delta: { content: replyText }, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  received = [];
  replyText = 'hello';
});

const target = (key: string): UpstreamTarget => ({ channel: { base_url: url }, key, upstreamModel: 'm-1', timeoutMs: 2000 });
const credential = JSON.stringify({ secret: SECRET, region: 'eu-west-1' });
const request: ChatRequest = { model: 'asked-for', messages: [{ role: 'user', content: 'hi' }] } as ChatRequest;

describe('a provider that signs its requests', () => {
  it('sends what it signed: its URL, headers and body bytes, whole and streamed', async () => {
    const reply = (await callUpstream(signedChat, target(credential), request)) as { choices: { message: { content: string } }[] };
    expect(reply.choices[0]!.message.content).toBe('hello');
    const events: ChatChunk[] = [];
    for await (const event of await streamUpstream(signedChat, target(credential), { ...request, stream: true })) events.push(event);
    expect(events.map((e) => e.choices[0]?.delta.content)).toEqual(['hello']);

    expect(received.map((r) => [r.method, r.path])).toEqual([['POST', '/models/m-1/chat?region=eu-west-1'], ['POST', '/models/m-1/chat?region=eu-west-1']]);
    expect(received[0]!.headers).toMatchObject({ 'content-type': 'application/json', accept: 'application/json' });
    expect(received[1]!.headers).toMatchObject({ accept: 'text/event-stream' });
    expect(JSON.parse(received[0]!.body)).toMatchObject({ model: 'm-1' });
  });

  it('fails the channel as a 401, sending nothing, when its credential cannot be read', async () => {
    for (const key of ['{"secret": 5, "region": "x"}', '{not json', '{"region":"eu-west-1"}', '["a"]']) {
      const failure = await callUpstream(signedChat, target(key), request).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(UpstreamError);
      expect(failure).toMatchObject({ kind: 'http', status: 401, message: expect.stringMatching(/^the channel's key .* \(read as the signing provider's credential\)$/) });
    }
    expect(received).toHaveLength(0);
  });

  it('takes each secret of a structured credential out of what the upstream answers, but not its settings', async () => {
    replyText = `you signed with ${SECRET} in eu-west-1`;
    const reply = (await callUpstream(signedChat, target(credential), request)) as { choices: { message: { content: string } }[] };
    expect(reply.choices[0]!.message.content).toBe('you signed with [redacted] in eu-west-1');
    const events: ChatChunk[] = [];
    for await (const event of await streamUpstream(signedChat, target(credential), { ...request, stream: true })) events.push(event);
    expect(events[0]!.choices[0]!.delta.content).toBe('you signed with [redacted] in eu-west-1');
  });
});
