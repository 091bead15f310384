/**
 * Google Vertex AI on a real HTTP port, with Google's OAuth token endpoint beside it
 * (`POST /token`, `mock-google-oauth.ts`: a JWT signed with a service account's key, exchanged
 * for a short-lived access token). Under
 * `/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}`:
 *
 * - `google`: `:generateContent` and `:streamGenerateContent?alt=sse` in Gemini's format (the
 *   Gemini mock's text model, `mock-gemini-text.ts`, and its tone for a body asking for audio),
 *   `:predict` for text embeddings (`{instances: [{content}]}` → `{predictions: [{embeddings:
 *   {values, statistics}}]}`, one instance a request for a `gemini-embedding-*` model);
 * - `anthropic`: `:rawPredict` and `:streamRawPredict` in Messages' format (the Anthropic mock's
 *   answers and checks), the body with `anthropic_version: "vertex-2023-10-16"` and no `model`.
 *
 * It refuses what Vertex refuses first: a missing, unknown, expired or revoked bearer token (401
 * UNAUTHENTICATED), a project not its own (403 PERMISSION_DENIED), a region not its own (404).
 * Errors are Google's `{"error": {code, message, status}}`. Its behaviours, counters and scripted
 * failures are the shared base's (`mock-upstream.ts`).
 */
import { createHash, randomUUID } from 'node:crypto';
import { asksForSpeech, GEMINI_PCM_MIME_TYPE, geminiChatRequest, geminiError, toBadRequest, type GeminiChatRequest } from '@gateway/contracts';
import { refusalOf } from './mock-anthropic-checks.ts';
import { answerAnthropic, type MockAnthropicBehaviour } from './mock-anthropic-upstream.ts';
import { textEvents } from './mock-gemini-text.ts';
import { mockSpeech, sinePcm } from './mock-gemini-speech.ts';
import { MockGoogleOAuth, newServiceAccount, type MockServiceAccount } from './mock-google-oauth.ts';
import { startMockUpstream, writeOrWait, type MockExchange, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';

export const MOCK_VERTEX_PROJECT = 'mock-project';
export const MOCK_VERTEX_REGION = 'us-central1';

export interface MockVertexOptions {
  /** The service accounts it knows. Default: one made for it. */
  accounts?: MockServiceAccount[];
  project?: string;
  region?: string;
  /** The life of each access token it issues, in seconds. Default 3600. */
  tokenLifetimeSeconds?: number;
}

/** Anthropic's behaviours; a Gemini model answers with `text` when it is a string, else an echo. */
export type MockVertexBehaviour = MockAnthropicBehaviour;

export interface MockVertexRequest {
  method: string;
  path: string;
  project: string;
  region: string;
  publisher: 'google' | 'anthropic' | '';
  model: string;
  /** `generateContent`, `streamGenerateContent`, `predict`, `rawPredict`, `streamRawPredict`. */
  action: string;
  /** The bearer token it came with. */
  token: string | undefined;
  body: Record<string, unknown>;
  at: number;
}

export type MockVertexUpstream = MockUpstream<MockVertexBehaviour, MockVertexRequest> & {
  oauth: MockGoogleOAuth;
  account: MockServiceAccount;
  project: string;
  region: string;
  /** The JSON key of `account` (its own by default) as a `vertex` channel takes it, its token_uri this mock's. */
  credential(account?: MockServiceAccount): string;
};

const ROUTE = /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):(\w+)$/;
const ACTIONS = { google: ['generateContent', 'streamGenerateContent', 'predict'], anthropic: ['rawPredict', 'streamRawPredict'] };
const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
const UNAUTHENTICATED = 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.';

export async function startMockVertexUpstream(options: MockVertexOptions = {}, initial: MockVertexBehaviour = {}): Promise<MockVertexUpstream> {
  const accounts = options.accounts ?? [newServiceAccount()];
  const project = options.project ?? MOCK_VERTEX_PROJECT;
  const region = options.region ?? MOCK_VERTEX_REGION;
  const oauth = new MockGoogleOAuth(accounts, options.tokenLifetimeSeconds);
  const mock = await startMockUpstream(vertexWireFormat(oauth, project, region), initial);
  return Object.assign(mock, {
    oauth,
    account: accounts[0]!,
    project,
    region,
    credential: (account = accounts[0]!) => JSON.stringify({
      type: 'service_account',
      project_id: project,
      private_key_id: account.privateKeyId,
      private_key: account.privateKeyPem,
      client_email: account.clientEmail,
      client_id: '100000000000000000001',
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: `${mock.url}/token`,
      region,
    }),
  });
}

function vertexWireFormat(oauth: MockGoogleOAuth, project: string, region: string): MockWireFormat<MockVertexBehaviour, MockVertexRequest> {
  let sequence = 0;
  const parse = (r: ReceivedRequest) => {
    const url = new URL(r.path, 'http://mock');
    const route = ROUTE.exec(url.pathname);
    return {
      route,
      sse: url.searchParams.get('alt') === 'sse',
      project: route ? decodeURIComponent(route[1]!) : '',
      region: route ? decodeURIComponent(route[2]!) : '',
      publisher: (route?.[3] ?? '') as MockVertexRequest['publisher'],
      model: route ? decodeURIComponent(route[4]!) : '',
      action: route?.[5] ?? '',
    };
  };
  const bearer = (r: ReceivedRequest) => /^Bearer (.+)$/.exec(String(r.headers.authorization ?? ''))?.[1];
  const google = (status: number, message: string) => ({ status, body: geminiError(status, message) });
  return {
    name: 'mock Vertex AI upstream',
    record(r) {
      const { project, region, publisher, model, action } = parse(r);
      return { method: r.method, path: r.path, project, region, publisher, model, action, token: bearer(r), body: r.json ?? {}, at: r.at };
    },
    servedBeside: (r) => r.method === 'POST' && r.path === '/token',
    answerOutside({ request, res }) {
      const { status, body } = oauth.grant(request.raw);
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
    },
    invalidJson: () => geminiError(400, 'Invalid JSON payload received.'),
    check(r) {
      const token = bearer(r);
      if (!token || !oauth.holderOf(token)) return google(401, UNAUTHENTICATED);
      const parsed = parse(r);
      if (r.method !== 'POST' || !parsed.route || !ACTIONS[parsed.publisher as 'google'].includes(parsed.action)) return google(404, `The requested URL ${r.path} was not found on this server.`);
      const resource = `projects/${parsed.project}/locations/${parsed.region}/publishers/${parsed.publisher}/models/${parsed.model}`;
      if (parsed.project !== project) return google(403, `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/${resource}' (or it may not exist).`);
      if (parsed.region !== region) return google(404, `Publisher model \`${resource}\` not found.`);
      if (parsed.action === 'streamGenerateContent' && !parsed.sse) return google(400, 'This mock streams server-sent events only: add ?alt=sse.');
      return parsed.publisher === 'anthropic' ? anthropicRefusal(r.json ?? {}, parsed.action) : undefined;
    },
    failureBody: (status) => geminiError(status, `mock failure ${status}`),
    overLimitBody: () => geminiError(429, 'Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.'),
    async answer(exchange, b) {
      const { publisher, action, model } = parse(exchange.request);
      if (publisher === 'anthropic') return answerAnthropic(exchange, ++sequence, b);
      if (action === 'predict') return predict(exchange, model);
      return generate(exchange, model, b, action === 'streamGenerateContent');
    },
  };
}

/** Anthropic on Vertex: its version in the body, no model there, `stream` as the method says; then the Messages API's own checks. */
function anthropicRefusal(body: Record<string, unknown>, action: string) {
  const invalid = (message: string) => ({ status: 400, body: { type: 'error', error: { type: 'invalid_request_error', message } } });
  if (body.anthropic_version !== VERTEX_ANTHROPIC_VERSION) return invalid(`anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`);
  if ('model' in body) return invalid('model: Extra inputs are not permitted');
  if ((body.stream === true) !== (action === 'streamRawPredict')) return invalid(`stream: ${action} takes stream ${action === 'streamRawPredict'}`);
  const refusal = refusalOf({ 'x-api-key': 'vertex', 'anthropic-version': '2023-06-01' }, { ...body, model: 'vertex' });
  return refusal ? invalid(refusal.message) : undefined;
}

async function generate({ request, res, fail }: MockExchange, model: string, b: MockVertexBehaviour, streamed: boolean): Promise<void> {
  const body = request.json ?? {};
  let events: Record<string, unknown>[];
  if (asksForSpeech(body)) events = [speechEvent(body, model)];
  else {
    const parsed = geminiChatRequest.safeParse(body);
    if (!parsed.success) return fail(400, geminiError(400, toBadRequest(parsed.error).message));
    const text = typeof b.text === 'string' ? b.text : null;
    events = textEvents(parsed.data as GeminiChatRequest, model, { text, cachedTokens: 0 }, streamed, randomUUID().replaceAll('-', '').slice(0, 22));
  }
  if (!streamed) return void res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(events[0]));
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) await writeOrWait(res, `data: ${JSON.stringify(event)}\r\n\r\n`);
  res.end();
}

/** The Gemini mock's tone for the text, in one event: Vertex answers speech as Gemini does. */
function speechEvent(body: Record<string, unknown>, model: string): Record<string, unknown> {
  const contents = (body.contents ?? []) as { parts?: { text?: unknown }[] }[];
  const text = contents.flatMap((c) => c.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  const speech = mockSpeech(text);
  return {
    candidates: [{ content: { role: 'model', parts: [{ inlineData: { mimeType: GEMINI_PCM_MIME_TYPE, data: sinePcm(speech.pcmBytes).toString('base64') } }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: speech.promptTokenCount, candidatesTokenCount: speech.candidatesTokenCount, totalTokenCount: speech.promptTokenCount + speech.candidatesTokenCount },
    modelVersion: model,
  };
}

/** `:predict` for a text embedding model: a vector a text, the same for the same text. */
function predict({ request, res, fail }: MockExchange, model: string): void {
  const body = request.json ?? {};
  const instances = body.instances as { content?: unknown }[] | undefined;
  if (!Array.isArray(instances) || instances.length === 0 || instances.some((i) => typeof i?.content !== 'string')) {
    return fail(400, geminiError(400, 'Invalid JSON payload: instances must be a list of {"content": string}.'));
  }
  if (/gemini-embedding/.test(model) && instances.length > 1) return fail(400, geminiError(400, `Model ${model} supports only one instance per request.`));
  const asked = (body.parameters as { outputDimensionality?: unknown } | undefined)?.outputDimensionality;
  const dimensions = typeof asked === 'number' ? asked : 8;
  const predictions = instances.map(({ content }) => {
    const digest = createHash('sha256').update(content as string).digest();
    return { embeddings: { values: Array.from({ length: dimensions }, (_, d) => (digest[d % digest.length]! - 127.5) / 127.5), statistics: { token_count: Math.ceil((content as string).length / 4), truncated: false } } };
  });
  res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ predictions }));
}
