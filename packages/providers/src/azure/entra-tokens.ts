/**
 * Access tokens for an `azure` channel's service principal, by the OAuth 2.0 client-credentials
 * grant as Microsoft Entra ID documents it: `POST {authority_host}/{tenant_id}/oauth2/v2.0/token`,
 * a form of `grant_type=client_credentials`, `client_id`, `client_secret` and
 * `scope=https://cognitiveservices.azure.com/.default`, answered
 * `{"token_type":"Bearer","expires_in":3599,"access_token":"…"}`. Held, shared and refreshed as
 * `held-tokens.ts` says (Entra's last 60 to 90 minutes, so refreshed 5 minutes before they end).
 *
 * A plain fetch, not `@azure/identity`: MSAL, under it, refuses an authority that is not https
 * and resolves the authority's OpenID metadata before the token, and the credential offers no
 * way past its own cache for a token Azure refused. One documented request is all this takes
 * (docs/api.md, the `azure` channel).
 *
 * The token endpoint is reached over the same pool and address policy as every upstream call
 * (`policedFetch`). Nothing here logs the secret or a token, or puts one in an error: a refused
 * token request is the channel's 401 naming Entra's error code and AADSTS number alone.
 */
import { parseRetryAfter, UpstreamError, upstreamFailure } from '@gateway/contracts';
import { HeldTokens, refreshTime, type AccessToken } from '../held-tokens.ts';
import { policedFetch } from '../upstream-request.ts';
import type { ServicePrincipal } from './credential.ts';

/** How long a token request may take. */
const TOKEN_TIMEOUT_MS = 30_000;
/** The largest token reply read (a token is a few kilobytes). */
const MAX_TOKEN_REPLY_CHARS = 256 * 1024;

const held = new HeldTokens(fetchEntraToken);

/** The access token to send for this service principal: the one held, or a new one. */
export const entraTokenFor = (principal: ServicePrincipal): Promise<string> => held.tokenFor(principal);

/** Forgets the token held for this service principal (Azure refused it). */
export const dropEntraToken = (principal: ServicePrincipal): void => held.drop(principal);

/** Where a service principal's tokens are asked for. */
export const tokenEndpoint = (principal: ServicePrincipal) => `${principal.authorityHost}/${encodeURIComponent(principal.tenantId)}/oauth2/v2.0/token`;

async function fetchEntraToken(principal: ServicePrincipal): Promise<AccessToken> {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: principal.clientId, client_secret: principal.clientSecret, scope: principal.scope });
  const asked = Date.now();
  let status: number;
  let retryAfter: number | undefined;
  let text: string;
  try {
    const response = await policedFetch(tokenEndpoint(principal), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form.toString(),
      signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
    });
    status = response.status;
    retryAfter = parseRetryAfter(response.headers.get('retry-after') ?? undefined);
    text = await response.text();
  } catch (error) {
    throw unreachable(error);
  }
  const reply = parseObject(text.length <= MAX_TOKEN_REPLY_CHARS ? text : '');
  if (status < 200 || status >= 300) throw refusal(status, reply, retryAfter);
  const token = reply?.access_token;
  if (typeof token !== 'string' || token === '') throw upstreamFailure.protocol('the Entra ID token endpoint answered no access_token');
  const expiresIn = Number(reply?.expires_in);
  const expiresAt = asked + (Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : 3600) * 1000;
  return { value: token, refreshAt: refreshTime(asked, expiresAt) };
}

/**
 * A refused token request as the channel's failure: refused (400, 401, 403: `invalid_client`, a
 * wrong or expired secret; `unauthorized_client`, an application not in the tenant; a tenant not
 * found) is its 401, which counts toward auto-disable; a throttled one a 429; an endpoint that is
 * down a failure to retry. Entra's error code and AADSTS number alone are kept (its description
 * names the application and tenant, and the error carries nothing of the request).
 */
function refusal(status: number, reply: Record<string, unknown> | undefined, retryAfter: number | undefined): UpstreamError {
  const code = typeof reply?.error === 'string' && /^[a-z_]{1,64}$/.test(reply.error) ? reply.error : undefined;
  const aadsts = Array.isArray(reply?.error_codes) && Number.isInteger(reply.error_codes[0]) ? `AADSTS${reply.error_codes[0] as number}` : undefined;
  const named = code || aadsts ? ` (${[code, aadsts].filter(Boolean).join(', ')})` : '';
  if (status === 400 || status === 401 || status === 403) return upstreamFailure.credentialRefused(`Microsoft Entra ID refused the service principal's token request${named}`);
  return upstreamFailure.http(status >= 500 ? 503 : status, `the Entra ID token endpoint answered ${status}${named}`, { retryAfter });
}

function unreachable(error: unknown): UpstreamError {
  if ((error as { name?: unknown } | undefined)?.name === 'TimeoutError') return upstreamFailure.timeout('the Entra ID token request took too long');
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = (error as { code?: unknown } | undefined)?.code ?? cause?.code;
  return upstreamFailure.connection(`the service principal's token request failed${typeof code === 'string' && /^[A-Z_]+$/.test(code) ? `: ${code}` : ''}`);
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
