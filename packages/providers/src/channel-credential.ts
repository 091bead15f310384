/**
 * A channel's key as a provider reads it: a plain key (`sk-…`), or a structured credential, a
 * JSON object in the key field (`{"api_key":"…","api_version":"2024-10-21"}`), for a provider
 * that needs more than one secret or a setting beside it. The key is encrypted in the store as
 * any key is; the router and `call-upstream.ts` take each secret of it out of what an upstream
 * answers (`channelKeySecrets`). Nothing here logs it or puts it in a message.
 */
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import type { OutgoingRequest } from './provider.ts';

/**
 * The channel's structured credential, or undefined for a plain key (one that does not start
 * with `{`). A key that starts with `{` but is no JSON object is the channel's failure.
 */
export function structuredCredential(key: string, provider: string): Record<string, unknown> | undefined {
  if (!key.trimStart().startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(key);
  } catch {
    throw badCredential(provider, 'starts with "{" but is not JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw badCredential(provider, 'is not a JSON object');
  return value as Record<string, unknown>;
}

/** A string field of a structured credential, or undefined; any other type is the channel's failure. */
export function credentialField(credential: Record<string, unknown>, field: string, provider: string): string | undefined {
  const value = credential[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw badCredential(provider, `has a "${field}" that is not a non-empty string`);
  return value;
}

/**
 * A credential the provider cannot use: the channel's fault, never the caller's, so it is
 * reported as the 401 an upstream would answer, and counts toward the channel's auto-disable.
 * `problem` names fields, never values.
 */
export function badCredential(provider: string, problem: string): UpstreamError {
  const error = upstreamFailure.credentialRefused(`the channel's key ${problem} (read as the ${provider} provider's credential)`);
  problems.set(error, problem);
  return error;
}

/** Each `badCredential`'s problem, for `credentialProblem`. */
const problems = new WeakMap<UpstreamError, string>();

/**
 * What a provider's `read` finds wrong with a key (`has a "region" that is not a non-empty
 * string`), or undefined when it reads it: a provider's `checkCredential`, for the management
 * API to refuse a key before any call. The problem names fields, never values.
 */
/**
 * `read`, remembered by key: a worker serves a few channels, so each key is parsed (its JSON read,
 * its id hashed) once, not on every request. A key `read` refuses is not remembered: it throws
 * again. Used on the request path; a check at the management API (`credentialProblem`) reads
 * afresh, so the gateway keeps no keys.
 */
export function readOnce<C>(read: (key: string) => C): (key: string) => C {
  const known = new Map<string, C>();
  return (key) => {
    const found = known.get(key);
    if (found !== undefined) return found;
    const credential = read(key);
    if (known.size >= 256) known.clear();
    known.set(key, credential);
    return credential;
  };
}

export function credentialProblem(read: (key: string) => unknown, key: string): string | undefined {
  try {
    read(key);
    return undefined;
  } catch (error) {
    const problem = error instanceof UpstreamError ? problems.get(error) : undefined;
    if (problem === undefined) throw error;
    return problem;
  }
}

/**
 * A `prepare` for an upstream that takes its key in headers: the provider's headers for the key,
 * under the request's own (JSON and the reply's type, and a client's headers the provider takes
 * over its own of the same name, such as Anthropic's version).
 */
export function keyInHeaders(headersFor: (key: string) => Record<string, string>) {
  return (request: OutgoingRequest, key: string): OutgoingRequest => ({ ...request, headers: { ...headersFor(key), ...request.headers } });
}
