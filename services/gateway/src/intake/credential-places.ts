import type { IncomingMessage } from 'node:http';
import { bearerCredential } from '../auth/access-token.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** Where requests take their turns as they are read, by credential (request-turns.ts); the key check vouches for them. */
    credentialPlaces?: CredentialPlaces;
  }
}

/** Places in the turns as requests are read that credentials not yet vouched for share. */
export const UNVOUCHED_PLACES = 16;
/** Credentials vouched for that a gateway remembers (those not accepted for longest forgotten first). */
export const VOUCHED_CREDENTIALS = 100_000;
/** The place of requests that carry no credential at all (health checks, sign-in, pages). */
const NO_CREDENTIAL = -1 - UNVOUCHED_PLACES;
/** Each request's credential hash as it was read (undefined: none), for its vouching after the key check. */
const hashOfRequest = new WeakMap<IncomingMessage, number | undefined>();

/**
 * Where a request takes its turn as it is read (request-turns.ts), from the credential it
 * carries, before the gateway has checked it.
 *
 * A credential the gateway has accepted before (an API key or access token its hooks checked)
 * takes its turns in its user's place: one place a user, however many keys and access tokens it
 * has had, as the turns after the key check are by user (model-relay.ts). Any other credential
 * shares one of UNVOUCHED_PLACES places, chosen by the credential: so 5,000 requests each with a
 * made-up key hold 16 places in the round robin, not 5,000 (another user's request waited
 * behind all of them), while one new key's requests keep together in one place, usually not the
 * place of another new key.
 *
 * Credentials are remembered by a 53-bit hash (cyrb53), never as sent, in two generations of at
 * most VOUCHED_CREDENTIALS / 2 each: a credential accepted again moves to the newer, and when the
 * newer is full the older is dropped whole (constant time, where a Set's oldest entry is found by
 * stepping over every one deleted before it). Two credentials that collide share a user's place.
 */
export class CredentialPlaces {
  /** Hash of a credential accepted lately → its user. */
  private newer = new Map<number, number>();
  private older = new Map<number, number>();
  private readonly generation: number;

  constructor(capacity = VOUCHED_CREDENTIALS) {
    this.generation = Math.max(1, Math.floor(capacity / 2));
  }

  placeOf(request: IncomingMessage): number {
    const hash = credentialHash(request);
    if (hash === undefined) return NO_CREDENTIAL;
    return this.newer.get(hash) ?? this.older.get(hash) ?? -1 - (hash % UNVOUCHED_PLACES);
  }

  /** The request's credential was checked and accepted as `user`'s: its requests take their turns in that user's place. */
  vouchFor(request: IncomingMessage, user: number): void {
    const hash = credentialHash(request);
    if (hash === undefined || this.newer.get(hash) === user) return;
    this.newer.set(hash, user);
    if (this.newer.size >= this.generation) {
      this.older = this.newer;
      this.newer = new Map();
    }
  }
}

/** The hash of a request's credential, computed once a request. */
function credentialHash(request: IncomingMessage): number | undefined {
  if (hashOfRequest.has(request)) return hashOfRequest.get(request);
  const credential = credentialOf(request);
  const hash = credential === '' ? undefined : cyrb53(credential);
  hashOfRequest.set(request, hash);
  return hash;
}

/**
 * The credential a request carries: the Authorization header (`Bearer` in any case and the
 * spaces around the key ignored, as the key check reads it, so one key spelt several ways is one
 * credential), else `x-goog-api-key`, else `x-api-key`, else ''.
 */
function credentialOf(request: IncomingMessage): string {
  const { authorization } = request.headers;
  if (authorization) return bearerCredential(authorization);
  const google = request.headers['x-goog-api-key'];
  if (typeof google === 'string') return google;
  const anthropic = request.headers['x-api-key'];
  return typeof anthropic === 'string' ? anthropic : '';
}

/** cyrb53 (bryc, public domain): a fast 53-bit string hash, not a cryptographic one. */
function cyrb53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
