/**
 * An Azure OpenAI resource on a real HTTP port: OpenAI's wire format (the OpenAI mock's answers,
 * whole or streamed as server-sent events) under its deployments,
 * `POST /openai/deployments/{deployment}/{chat/completions|completions|embeddings|audio/speech}?api-version=…`,
 * refusing what Azure refuses before it serves anything:
 *
 * - an `api-version` missing or not one it knows: 400, `{"error":{"code":"BadRequest",…}}`;
 * - a wrong `api-key`, or none: 401,
 *   `{"error":{"code":"401","message":"Access denied due to invalid subscription key…"}}`;
 *   a bearer token it did not issue, or expired or revoked: 401,
 *   `{"error":{"code":"401","message":"Unauthorized. Access token is missing, invalid, …"}}`;
 * - a deployment it does not have: 404, `{"error":{"code":"DeploymentNotFound",…}}`.
 *
 * Microsoft Entra ID's token endpoint is beside it (`POST /{tenant}/oauth2/v2.0/token`,
 * `mock-entra-id.ts`), so a service principal's `authority_host` is the mock's URL. Its
 * behaviours, counters and scripted failures are the shared base's (`mock-upstream.ts`).
 */
import { MockEntraId, newServicePrincipal, TOKEN_PATH, type MockServicePrincipal } from './mock-entra-id.ts';
import { answerOpenAI, type MockOpenAIBehaviour } from './mock-openai-upstream.ts';
import { startMockUpstream, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';

export const MOCK_AZURE_API_KEY = 'mock-azure-key-0123456789abcdef';

/** Versions the mock accepts: a GA one and a preview, as a resource does (among many). */
export const MOCK_AZURE_API_VERSIONS = ['2024-10-21', '2025-04-01-preview'];

export interface MockAzureOptions {
  /** The key callers must send in `api-key`. Default MOCK_AZURE_API_KEY. */
  apiKey?: string;
  /** An Entra ID access token accepted as `Authorization: Bearer`. Default: none. */
  entraToken?: string;
  /** The resource's deployments; others get 404 DeploymentNotFound. Default: any name. */
  deployments?: string[];
  /** The service principals Entra ID knows. Default: one made for it. */
  principals?: MockServicePrincipal[];
  /** The life of each token Entra ID issues, in seconds. Default 3599. */
  tokenLifetimeSeconds?: number;
}

export interface MockAzureRequest {
  method: string;
  /** The path with its query, as sent. */
  path: string;
  deployment: string;
  /** `chat/completions`, `completions`, `embeddings` or `audio/speech`. */
  operation: string;
  apiVersion: string | null;
  /** The `api-key` header. */
  apiKey: string | undefined;
  authorization: string | undefined;
  body: Record<string, unknown>;
  raw: string;
  at: number;
}

export type MockAzureUpstream = MockUpstream<MockOpenAIBehaviour, MockAzureRequest> & {
  apiKey: string;
  entra: MockEntraId;
  principal: MockServicePrincipal;
  /** A service principal (its own by default) as an `azure` channel's key, its authority this mock. */
  credential(principal?: MockServicePrincipal, fields?: Record<string, string>): string;
};

const ROUTE = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings|audio\/speech)$/;

const azureError = (code: string, message: string) => ({ error: { code, message } });
const INVALID_KEY = 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.';
const INVALID_TOKEN = 'Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.';

export async function startMockAzureUpstream(options: MockAzureOptions = {}, initial: MockOpenAIBehaviour = {}): Promise<MockAzureUpstream> {
  const apiKey = options.apiKey ?? MOCK_AZURE_API_KEY;
  const principals = options.principals ?? [newServicePrincipal()];
  const entra = new MockEntraId(principals, options.tokenLifetimeSeconds);
  const mock = await startMockUpstream(azureWireFormat({ ...options, apiKey }, entra), initial);
  const credential = (principal = principals[0]!, fields: Record<string, string> = {}) =>
    JSON.stringify({ tenant_id: principal.tenantId, client_id: principal.clientId, client_secret: principal.clientSecret, authority_host: mock.url, ...fields });
  return Object.assign(mock, { apiKey, entra, principal: principals[0]!, credential });
}

function azureWireFormat(options: MockAzureOptions & { apiKey: string }, entra: MockEntraId): MockWireFormat<MockOpenAIBehaviour, MockAzureRequest> {
  const parse = (r: ReceivedRequest) => {
    const url = new URL(r.path, 'http://mock');
    const route = ROUTE.exec(url.pathname);
    return { route, deployment: route ? decodeURIComponent(route[1]!) : '', operation: route?.[2] ?? '', apiVersion: url.searchParams.get('api-version') };
  };
  const header = (r: ReceivedRequest, name: string) => (typeof r.headers[name] === 'string' ? (r.headers[name] as string) : undefined);
  const bearer = (r: ReceivedRequest) => /^Bearer (.+)$/.exec(header(r, 'authorization') ?? '')?.[1];
  const tokenAccepted = (token: string) => token === options.entraToken || entra.accepts(token);
  return {
    name: 'mock Azure OpenAI upstream',
    record(r) {
      const { deployment, operation, apiVersion } = parse(r);
      return { method: r.method, path: r.path, deployment, operation, apiVersion, apiKey: header(r, 'api-key'), authorization: header(r, 'authorization'), body: r.json ?? {}, raw: r.raw, at: r.at };
    },
    servedBeside: (r) => r.method === 'POST' && TOKEN_PATH.test(new URL(r.path, 'http://mock').pathname),
    answerOutside({ request, res }) {
      const contentType = typeof request.headers['content-type'] === 'string' ? request.headers['content-type'] : undefined;
      const { status, body } = entra.grant(new URL(request.path, 'http://mock').pathname, contentType, request.raw);
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store, no-cache' }).end(JSON.stringify(body));
    },
    invalidJson: () => azureError('BadRequest', 'The request body is not valid JSON.'),
    check(r) {
      const { route, deployment, apiVersion } = parse(r);
      if (!apiVersion || !MOCK_AZURE_API_VERSIONS.includes(apiVersion)) {
        return { status: 400, body: azureError('BadRequest', apiVersion ? 'API version not supported' : 'Missing required query parameter: api-version') };
      }
      const token = bearer(r);
      if (token !== undefined && header(r, 'api-key') === undefined) {
        if (!tokenAccepted(token)) return { status: 401, body: azureError('401', INVALID_TOKEN) };
      } else if (header(r, 'api-key') !== options.apiKey) return { status: 401, body: azureError('401', INVALID_KEY) };
      if (r.method !== 'POST' || !route) return { status: 404, body: azureError('404', 'Resource not found') };
      if (options.deployments && !options.deployments.includes(deployment)) {
        return { status: 404, body: azureError('DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.') };
      }
      return undefined;
    },
    failureBody: (status) => azureError(String(status), `mock failure ${status}`),
    overLimitBody: () => azureError('429', 'Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 1 second.'),
    answer: (exchange, b) => answerOpenAI(exchange, b, `/v1/${parse(exchange.request).operation}`),
  };
}
