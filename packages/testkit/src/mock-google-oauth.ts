/**
 * Google's OAuth 2.0 token endpoint as it treats a service account (RFC 7523's JWT bearer grant):
 * the form's `assertion` is a JWT whose RS256 signature must verify against the account's public
 * key, `iss` must name an account it knows and has not revoked, `aud` must be Google's token URL,
 * and the JWT must be current and live at most an hour. A refusal is a 400 with
 * `{"error": "invalid_grant", "error_description": …}`, as Google's. A grant is a short-lived
 * access token (`expires_in`), which the mock Vertex AI service then accepts until it expires.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';

export const GOOGLE_TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** A service account: its key as the console downloads it (but `token_uri`), and its public half. */
export interface MockServiceAccount {
  clientEmail: string;
  privateKeyPem: string;
  privateKeyId: string;
  publicKey: KeyObject;
}

/** A new service account with an RSA key of its own (node:crypto). */
export function newServiceAccount(clientEmail = `gateway-${randomBytes(3).toString('hex')}@mock-project.iam.gserviceaccount.com`): MockServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    clientEmail,
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    privateKeyId: randomBytes(20).toString('hex'),
    publicKey: createPublicKey(privateKey),
  };
}

export interface IssuedToken {
  token: string;
  clientEmail: string;
  expiresAt: number;
}

export type TokenAnswer = { status: number; body: Record<string, unknown> };

/** The token endpoint's state: the accounts it knows, the tokens it issued, the accounts revoked. */
export class MockGoogleOAuth {
  readonly issued: IssuedToken[] = [];
  private readonly accounts = new Map<string, KeyObject>();
  private readonly revoked = new Set<string>();

  /** The life of each token it issues, in seconds. */
  expiresInSeconds: number;

  constructor(accounts: MockServiceAccount[], expiresInSeconds = 3600) {
    this.expiresInSeconds = expiresInSeconds;
    for (const account of accounts) this.accounts.set(account.clientEmail, account.publicKey);
  }

  /** Refuses the account's token requests, and every token it was issued, from now on. */
  revoke(clientEmail: string): void {
    this.revoked.add(clientEmail);
  }

  /** The account a bearer token was issued to, while it is live; undefined for any other. */
  holderOf(token: string, now = Date.now()): string | undefined {
    const found = this.issued.find((issued) => issued.token === token);
    if (!found || found.expiresAt <= now || this.revoked.has(found.clientEmail)) return undefined;
    return found.clientEmail;
  }

  /** The answer to a token request's form body. */
  grant(form: string): TokenAnswer {
    const params = new URLSearchParams(form);
    if (params.get('grant_type') !== JWT_BEARER) return refusal('unsupported_grant_type', 'Invalid grant_type.');
    const [header, payload, signature, extra] = (params.get('assertion') ?? '').split('.');
    if (!header || !payload || !signature || extra !== undefined) return refusal('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    const claims = parseJson(payload) as { iss?: unknown; aud?: unknown; iat?: unknown; exp?: unknown; scope?: unknown } | undefined;
    const alg = (parseJson(header) as { alg?: unknown } | undefined)?.alg;
    const publicKey = typeof claims?.iss === 'string' ? this.accounts.get(claims.iss) : undefined;
    if (!claims || alg !== 'RS256' || !publicKey || this.revoked.has(claims.iss as string)) return refusal('invalid_grant', 'Invalid grant: account not found');
    if (!verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))) return refusal('invalid_grant', 'Invalid JWT Signature.');
    const now = Math.floor(Date.now() / 1000);
    const { iat, exp } = claims;
    if (claims.aud !== GOOGLE_TOKEN_AUDIENCE || typeof iat !== 'number' || typeof exp !== 'number' || exp <= now || iat > now + 60 || exp - iat > 3600) {
      return refusal('invalid_grant', 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.');
    }
    if (typeof claims.scope !== 'string' || !claims.scope.split(' ').includes(CLOUD_PLATFORM_SCOPE)) return refusal('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const token = `ya29.mock-${randomBytes(24).toString('base64url')}`;
    this.issued.push({ token, clientEmail: claims.iss as string, expiresAt: Date.now() + this.expiresInSeconds * 1000 });
    return { status: 200, body: { access_token: token, expires_in: this.expiresInSeconds, token_type: 'Bearer' } };
  }
}

const refusal = (error: string, description: string): TokenAnswer => ({ status: 400, body: { error, error_description: description } });

function parseJson(base64url: string): unknown {
  try {
    return JSON.parse(Buffer.from(base64url, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}
