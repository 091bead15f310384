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
 *   answers and checks), the body with `anthropic_version: "vertex-2023-10-16"` and no `model`;
 *   `count-tokens:rawPredict` (the model in the body) answers Anthropic's count_tokens
 *   (`mock-vertex-anthropic.ts`, outside behaviours and counters, as the Anthropic mock's count).
 *
 * It refuses what Vertex refuses first: a missing, unknown, expired or revoked bearer token (401
 * UNAUTHENTICATED), a project not its own (403 PERMISSION_DENIED), a region not its own (404).
 * Errors are Google's `{"error": {code, message, status}}`. Its behaviours, counters and scripted
 * failures are the shared base's (`mock-upstream.ts`). Google's answers are `mock-vertex-google.ts`.
 */
import { geminiError } from '@gateway/contracts';
import { answerAnthropic, type MockAnthropicBehaviour } from './mock-anthropic-upstream.ts';
import { MockGoogleOAuth, newServiceAccount, type MockServiceAccount } from './mock-google-oauth.ts';
import { startMockUpstream, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';
import { answerCountTokens, anthropicRefusal, COUNT_TOKENS_MODEL, countTokensRefusal } from './mock-vertex-anthropic.ts';
import { generate, predict } from './mock-vertex-google.ts';

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
  /** The path's model: `count-tokens` for Anthropic's count (its model is the body's). */
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
    answerOutside(exchange) {
      if (parse(exchange.request).model === COUNT_TOKENS_MODEL) return answerCountTokens(exchange);
      const { status, body } = oauth.grant(exchange.request.raw);
      exchange.res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
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
      if (parsed.publisher !== 'anthropic') return undefined;
      if (parsed.model !== COUNT_TOKENS_MODEL) return anthropicRefusal(r.json ?? {}, parsed.action);
      if (parsed.action !== 'rawPredict') return google(404, `The requested URL ${r.path} was not found on this server.`);
      return countTokensRefusal(r.json ?? {}) ?? 'answered-outside';
    },
    failureBody: (status) => geminiError(status, `mock failure ${status}`),
    overLimitBody: () => geminiError(429, 'Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.'),
    async answer(exchange, b) {
      const { publisher, action, model } = parse(exchange.request);
      if (publisher === 'anthropic') return answerAnthropic(exchange, ++sequence, b);
      if (action === 'predict') return predict(exchange, model);
      return generate(exchange, model, b.text, action === 'streamGenerateContent');
    },
  };
}
