/**
 * Authentication as `onRequest` hooks: the caller is known from the headers alone, before a
 * byte of the body is read, so an unauthenticated client cannot make the gateway parse a body.
 * Each route family adds the hook for its own credentials; routes read the result from the
 * request.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { forbidden, Role, type Actor } from '@gateway/contracts';
import type { UserStore } from '@gateway/store';
import { authenticateAccessToken } from './access-token.ts';
import type { ApiKeyAuth, KeyHolder } from './api-key.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key's holder, on the model routes. */
    keyHolder: KeyHolder | null;
    /** The signed-in user, on management routes that need one. */
    actor: Actor | null;
  }
}

/** An API key in a header (and `x-goog-api-key` on the Gemini routes, `x-api-key` on Anthropic's). */
export function apiKeyHook(apiKeys: ApiKeyAuth, options: { googleHeader?: boolean; anthropicHeader?: boolean } = {}): onRequestAsyncHookHandler {
  return async (request) => {
    request.keyHolder = await apiKeys.authenticate({ headers: request.headers, query: request.query, googleHeader: options.googleHeader, anthropicHeader: options.anthropicHeader });
    vouchedFor(request, request.keyHolder.userId);
  };
}

/** An access token, for management routes whose operation needs a signed-in caller. */
export function accessTokenHook(users: UserStore, needsActor: (request: FastifyRequest) => boolean): onRequestAsyncHookHandler {
  return async (request) => {
    if (!needsActor(request)) return;
    request.actor = await actorOfRequest(users, request);
  };
}

/**
 * An administrator's access token (`Role.admin` or above), for the management routes the gateway answers
 * itself rather than through the admin queue: a common user's is a 403, as the admin worker's.
 */
export function administratorHook(users: UserStore): onRequestAsyncHookHandler {
  return async (request) => {
    const actor = await actorOfRequest(users, request);
    if (actor.role < Role.admin) throw forbidden('insufficient privileges for this operation');
    request.actor = actor;
  };
}

/**
 * The caller of a request's access token (authenticateAccessToken); the token, accepted, takes
 * its turns as requests are read in its user's place from then on.
 */
export async function actorOfRequest(users: UserStore, request: FastifyRequest): Promise<Actor> {
  const actor = await authenticateAccessToken(users, request.headers);
  vouchedFor(request, actor.id);
  return actor;
}

/** The request's credential was accepted as `user`'s: its requests take their turns in that user's place. */
function vouchedFor(request: FastifyRequest, user: number): void {
  request.server.credentialPlaces?.vouchFor(request.raw, user);
}

/** The key holder an `apiKeyHook` found; a route without the hook is a programming error. */
export function keyHolderOf(request: FastifyRequest): KeyHolder {
  if (!request.keyHolder) throw new Error('route has no apiKeyHook');
  return request.keyHolder;
}
