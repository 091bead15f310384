/**
 * OAuth access tokens for a `vertex` channel's service account, from google-auth-library's JWT
 * client (a JWT signed with the account's private key, exchanged at its `token_uri` for a token
 * of scope cloud-platform), held, shared and refreshed as `held-tokens.ts` says (Google's last an
 * hour, so refreshed after 55 minutes).
 *
 * The token endpoint is reached over the same pool and address policy as every upstream call
 * (`policedFetch`). Nothing here logs a token, a key or an assertion, or puts one in an error:
 * a refused token request is the channel's 401 naming Google's error code alone.
 */
import { JWT, gaxios } from 'google-auth-library';
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { HeldTokens, refreshTime, type AccessToken } from '../held-tokens.ts';
import { policedFetch } from '../upstream-request.ts';
import { GOOGLE_TOKEN_URI, type VertexCredential } from './credential.ts';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** How long a token request may take. */
const TOKEN_TIMEOUT_MS = 30_000;

const held = new HeldTokens(fetchAccessToken);

/** The access token to send for this service account: the one held, or a new one. */
export const accessTokenFor = (credential: VertexCredential): Promise<string> => held.tokenFor(credential);

/** Forgets the token held for this service account (the upstream refused it). */
export const dropAccessToken = (credential: VertexCredential): void => held.drop(credential);

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
  return { value: tokens.access_token, refreshAt: refreshTime(asked, expiresAt) };
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
