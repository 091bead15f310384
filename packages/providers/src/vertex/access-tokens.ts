/**
 * OAuth access tokens for a `vertex` channel's service account, from google-auth-library's JWT
 * client (a JWT signed with the account's private key, exchanged at its `token_uri` for a token
 * of scope cloud-platform). One token a service account is held and shared by every request of
 * the process, and a new one fetched before it expires: past half its life, or in its last five
 * minutes, whichever comes later (Google's last an hour, so refreshed after 55 minutes). Requests
 * that find it due at once share one fetch. A token the upstream refused (a 401) is dropped, so
 * the next attempt fetches another.
 *
 * The token endpoint is reached over the same pool and address policy as every upstream call
 * (`policedFetch`). Nothing here logs a token, a key or an assertion, or puts one in an error:
 * a refused token request is the channel's 401 naming Google's error code alone.
 */
import { JWT, gaxios } from 'google-auth-library';
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { policedFetch } from '../upstream-request.ts';
import { GOOGLE_TOKEN_URI, type VertexCredential } from './credential.ts';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** The longest a token is kept short of its expiry; a short-lived one is refreshed past half its life. */
const REFRESH_MARGIN_MS = 5 * 60_000;
/** How long a token request may take. */
const TOKEN_TIMEOUT_MS = 30_000;

interface AccessToken {
  value: string;
  /** When to fetch the next one (epoch ms). */
  refreshAt: number;
}

const held = new Map<string, Promise<AccessToken>>();

/** The access token to send for this service account: the one held, or a new one. */
export async function accessTokenFor(credential: VertexCredential): Promise<string> {
  const entry = held.get(credential.id);
  if (entry) {
    const token = await entry.catch(() => undefined);
    if (token && Date.now() < token.refreshAt) return token.value;
    // Due or failed: the first request to see it replaces it; the others wait on its fetch.
    if (held.get(credential.id) === entry) held.delete(credential.id);
  }
  return (await (held.get(credential.id) ?? fetchFor(credential))).value;
}

/** Forgets the token held for this service account (the upstream refused it). */
export function dropAccessToken(credential: VertexCredential): void {
  held.delete(credential.id);
}

function fetchFor(credential: VertexCredential): Promise<AccessToken> {
  const fetching = fetchAccessToken(credential);
  // A worker serves a few channels; more than that are keys no longer in use.
  if (held.size >= 256) held.clear();
  held.set(credential.id, fetching);
  fetching.catch(() => {
    if (held.get(credential.id) === fetching) held.delete(credential.id);
  });
  return fetching;
}

async function fetchAccessToken(credential: VertexCredential): Promise<AccessToken> {
  const client = new JWT({
    email: credential.clientEmail,
    key: credential.privateKey,
    keyId: credential.privateKeyId,
    scopes: [CLOUD_PLATFORM_SCOPE],
    transporter: new gaxios.Gaxios({ fetchImplementation: toTokenUri(credential.tokenUri), timeout: TOKEN_TIMEOUT_MS }),
  });
  const asked = Date.now();
  let tokens: { access_token?: string | null; expiry_date?: number | null };
  try {
    tokens = await client.authorize();
  } catch (error) {
    throw tokenRequestFailure(error);
  }
  if (!tokens.access_token) throw upstreamFailure.protocol('the token endpoint answered no access_token');
  const expiresAt = tokens.expiry_date ?? asked + 3600_000;
  const lifetime = Math.max(0, expiresAt - asked);
  return { value: tokens.access_token, refreshAt: expiresAt - Math.min(REFRESH_MARGIN_MS, lifetime / 2) };
}

/**
 * google-auth-library asks Google's endpoint whatever the key's `token_uri` says: the key's own
 * is where this fetch sends it (the same for a key of Google's).
 */
function toTokenUri(tokenUri: string): typeof fetch {
  return ((input: string | URL, init?: RequestInit) => {
    const url = String(input instanceof URL ? input.href : input);
    return policedFetch(url === GOOGLE_TOKEN_URI ? tokenUri : url, init);
  }) as typeof fetch;
}

/**
 * A failed token request as the channel's failure: refused (400, 401, 403: `invalid_grant`, a
 * disabled or deleted account, a bad signature) is its 401, which counts toward auto-disable;
 * a token endpoint that is down or busy is a failure to retry. Google's error code alone is
 * kept (the error carries the request, whose assertion is a credential).
 */
function tokenRequestFailure(error: unknown): UpstreamError {
  const response = (error as { response?: { status?: unknown; data?: unknown } } | undefined)?.response;
  const status = typeof response?.status === 'number' ? response.status : undefined;
  if (status === undefined) {
    const code = (error as { code?: unknown } | undefined)?.code;
    return upstreamFailure.connection(`the service account's token request failed${typeof code === 'string' && /^[A-Z_]+$/.test(code) ? `: ${code}` : ''}`);
  }
  const reason = (response?.data as { error?: unknown } | undefined)?.error;
  const named = typeof reason === 'string' && /^[a-z_]{1,64}$/.test(reason) ? ` (${reason})` : '';
  if (status === 400 || status === 401 || status === 403) {
    return upstreamFailure.credentialRefused(`Google refused the service account's token request${named}`);
  }
  return upstreamFailure.http(status >= 500 ? 503 : status, `the token endpoint answered ${status}${named}`);
}
