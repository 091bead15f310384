import { createHash, randomBytes, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 64 };

/** `scrypt$N$r$p$salt$hash`, so the cost can be raised later without breaking old hashes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n), r: Number(r), p: Number(p), maxmem: 64 * 1024 * 1024,
  });
  return timingSafeEqual(actual, expected);
}

export function sha256(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Compares two hex digests without leaking where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function randomText(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

/** An API key as new-api issues them: `sk-` and 48 characters. */
const newApiKey = () => `sk-${randomText(48)}`;

/** What the store keeps of an API key: its digest and a masked preview, never the key. */
export interface IssuedKey {
  key_hash: string;
  key_preview: string;
}

/** A new API key, to show its owner once, and what the store may keep of it. */
export function issueApiKey(): { key: string; issued: IssuedKey } {
  const key = newApiKey();
  return { key, issued: { key_hash: sha256(key), key_preview: maskSecret(key) } };
}
export const newAccessToken = () => randomText(32);

/**
 * Shows the first and last few characters of a secret, never enough to use it: besides an `sk-`
 * prefix, at most a quarter of it (3 and 4 characters of a long one; of a short self-hosted key
 * of 11, the last 2, where 7 of 11 were shown before).
 */
export function maskSecret(secret: string): string {
  if (secret.length <= 10) return '*'.repeat(secret.length);
  const prefix = secret.startsWith('sk-') ? 'sk-' : '';
  const rest = secret.slice(prefix.length);
  const shown = Math.min(prefix ? 6 : 7, Math.floor(rest.length / 4));
  const head = Math.max(0, shown - 4);
  return `${prefix}${rest.slice(0, head)}${'*'.repeat(8)}${rest.slice(rest.length - (shown - head))}`;
}
