/**
 * Microsoft Entra ID's token endpoint as it treats a service principal (the OAuth 2.0
 * client-credentials grant): `POST /{tenant}/oauth2/v2.0/token` with a form of
 * `grant_type=client_credentials`, `client_id`, `client_secret` and a `scope` ending in
 * `/.default`. A refusal is Entra's error JSON, `{"error", "error_description": "AADSTS…: …",
 * "error_codes", "timestamp", "trace_id", "correlation_id", "error_uri"}`: a wrong secret a 401
 * `invalid_client` (AADSTS7000215), an unknown tenant or application a 400. A grant is
 * `{"token_type": "Bearer", "expires_in", "ext_expires_in", "access_token"}`, a JWT-shaped token
 * that the mock Azure OpenAI resource then accepts until it expires or is revoked.
 */
import { randomBytes, randomUUID } from 'node:crypto';

export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';
export const TOKEN_PATH = /^\/([^/]+)\/oauth2\/v2\.0\/token$/;

/** An application registered in a tenant, with a client secret. */
export interface MockServicePrincipal {
  tenantId: string;
  clientId: string;
  clientSecret: string;
}

/** A new service principal in a tenant of its own. */
export function newServicePrincipal(): MockServicePrincipal {
  return { tenantId: randomUUID(), clientId: randomUUID(), clientSecret: `mock~${randomBytes(24).toString('base64url')}` };
}

export interface IssuedEntraToken {
  token: string;
  clientId: string;
  issuedAt: number;
  expiresAt: number;
}

export type EntraAnswer = { status: number; body: Record<string, unknown> };

/** The token endpoint's state: the principals it knows, the tokens it issued, the tokens revoked. */
export class MockEntraId {
  readonly issued: IssuedEntraToken[] = [];
  /** Token requests received, granted or refused. */
  tokenRequests = 0;
  private readonly revoked = new Set<string>();

  /** The life of each token it issues, in seconds. */
  expiresInSeconds: number;

  private readonly principals: MockServicePrincipal[];

  constructor(principals: MockServicePrincipal[], expiresInSeconds = 3599) {
    this.principals = principals;
    this.expiresInSeconds = expiresInSeconds;
  }

  /** Refuses a token it issued (the last one by default) from now on, as a revoked session is. */
  revoke(token = this.issued.at(-1)?.token): void {
    if (token) this.revoked.add(token);
  }

  /** Whether a bearer token is one it issued, unexpired and not revoked. */
  accepts(token: string, now = Date.now()): boolean {
    const found = this.issued.find((issued) => issued.token === token);
    return found !== undefined && found.expiresAt > now && !this.revoked.has(token);
  }

  /** The answer to a token request at `path` with its form body. */
  grant(path: string, contentType: string | undefined, form: string): EntraAnswer {
    this.tokenRequests++;
    const tenant = decodeURIComponent(TOKEN_PATH.exec(path)?.[1] ?? '');
    const params = new URLSearchParams(form);
    if (!contentType?.startsWith('application/x-www-form-urlencoded') || !params.has('grant_type')) {
      return refusal(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'grant_type'.");
    }
    if (params.get('grant_type') !== 'client_credentials') {
      return refusal(400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    }
    if (!this.principals.some((p) => p.tenantId === tenant)) {
      return refusal(400, 'invalid_request', 90002, `Tenant '${tenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`);
    }
    const clientId = params.get('client_id') ?? '';
    const principal = this.principals.find((p) => p.tenantId === tenant && p.clientId === clientId);
    if (!principal) {
      return refusal(400, 'unauthorized_client', 700016, `Application with identifier '${clientId}' was not found in the directory '${tenant}'.`);
    }
    if (params.get('client_secret') !== principal.clientSecret) {
      return refusal(401, 'invalid_client', 7000215, 'Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app \'' + clientId + '\'.');
    }
    if (params.get('scope') !== COGNITIVE_SERVICES_SCOPE) {
      return refusal(400, 'invalid_scope', 1002012, `The provided value for scope ${params.get('scope') ?? ''} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`);
    }
    const now = Date.now();
    const token = jwtShaped({ aud: 'https://cognitiveservices.azure.com', iss: `https://sts.windows.net/${tenant}/`, tid: tenant, appid: clientId, iat: Math.floor(now / 1000), exp: Math.floor(now / 1000) + this.expiresInSeconds });
    this.issued.push({ token, clientId, issuedAt: now, expiresAt: now + this.expiresInSeconds * 1000 });
    return { status: 200, body: { token_type: 'Bearer', expires_in: this.expiresInSeconds, ext_expires_in: this.expiresInSeconds, access_token: token } };
  }
}

function refusal(status: number, error: string, code: number, message: string): EntraAnswer {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = new Date().toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  return {
    status,
    body: {
      error,
      error_description: `AADSTS${code}: ${message} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    },
  };
}

/** A token shaped as Entra's (a JWT's three parts), with a random signature: the mock checks it by its list, not its signature. */
function jwtShaped(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ typ: 'JWT', alg: 'RS256', kid: 'mock' })}.${part({ ...claims, jti: randomUUID() })}.${randomBytes(32).toString('base64url')}`;
}
