/**
 * The administrators' browser session, shared by the operations console (/admin) and the queue
 * dashboard (/admin/queues): a sign-in form that sets an HttpOnly session cookie for /admin, a
 * sign-out, and the guard every page and call behind them runs first. An administrator's API
 * access token works in place of the cookie. A change sent with the cookie must come from the
 * gateway's own pages (see same-origin.ts); one sent with a token needs no such proof.
 */
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { forbidden, GatewayError, Role, unauthenticated, UserStatus, type Actor } from '@gateway/contracts';
import type { Store } from '@gateway/store';
import type { AdminJobs } from '../management/admin-jobs.ts';
import { actorOfRequest } from '../auth/request-auth.ts';
import { setRetryHeaders } from '../http/error-formats.ts';
import { escapeHtml } from './html.ts';
import { crossOriginProblem, requestScheme } from './same-origin.ts';

/** Every page the session opens is under this path, and the cookie is sent to nothing else. */
export const ADMIN_PATH = '/admin';
const COOKIE = 'gw_dashboard';

export interface AdminSessionOptions {
  store: Store;
  /** Runs the sign-in and sign-out operations on the admin queue. */
  adminJobs: AdminJobs;
  bodyLimitBytes: number;
}

/** A session this gateway could have set (43 base64url characters); any other value is none. */
const SESSION_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const sessionOf = (request: FastifyRequest): string | undefined => {
  const value = request.cookies[COOKIE];
  return value !== undefined && SESSION_SHAPE.test(value) ? value : undefined;
};

/**
 * The session cookie: never readable by scripts, sent only to the administrators' pages, and
 * only over HTTPS when the request came over HTTPS (behind a proxy that ends TLS: with
 * TRUST_PROXY set, its X-Forwarded-Proto says so).
 */
const sessionCookie = (request: FastifyRequest) => ({ httpOnly: true, sameSite: 'strict', path: ADMIN_PATH, secure: requestScheme(request) === 'https' }) as const;

/**
 * Before the console, the cookie's path was /admin/queues; a browser sends such a cookie first
 * there, and a stale one would hide the new session from the dashboard. Cleared with every
 * sign-in and sign-out.
 */
const clearOldCookie = (reply: FastifyReply, request: FastifyRequest) => reply.clearCookie(COOKIE, { ...sessionCookie(request), path: `${ADMIN_PATH}/queues` });

/** True when the request carries the session cookie (a credential the browser adds by itself). */
const hasSessionCookie = (request: FastifyRequest) => request.cookies[COOKIE] !== undefined;

/** The signed-in user: by the session cookie, else by an access token; 401 with neither. */
async function actorOf(request: FastifyRequest, store: Store, what: string): Promise<Actor> {
  const session = sessionOf(request);
  if (session) {
    const owner = await store.sessions.userOf(session);
    const user = owner ? await store.users.get(owner.userId) : null;
    // A session outlives neither a new password nor a disabled or deleted user.
    if (user && user.status === UserStatus.enabled && user.session_epoch === owner!.epoch) return { id: user.id, role: user.role };
  }
  if (request.headers.authorization) return actorOfRequest(store.users, request);
  throw unauthenticated(`sign in to see the ${what}`);
}

/** The sign-in form, posting to `<base>/login`. */
export function signInPage(base: string, title: string, message = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · ${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;background:#f4f5f7;display:flex;justify-content:center;padding-top:10vh}
form{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;min-width:18rem}
label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin-top:1.2rem;padding:.6rem 1rem;width:100%}.error{color:#b00020}</style></head>
<body><form method="post" action="${escapeHtml(base)}/login"><h1>${escapeHtml(title)}</h1>
${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></body></html>`;
}

/** A refusal: the sign-in form to a browser asking for a page, new-api's envelope to anything else. */
export function refuse(reply: FastifyReply, request: FastifyRequest, error: GatewayError, page: { base: string; title: string }) {
  const wantsHtml = request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
  if (wantsHtml) {
    return reply.status(error.status).type('text/html; charset=utf-8').send(signInPage(page.base, page.title, error.status === 403 ? error.message : ''));
  }
  return reply.status(error.status).send({ success: false, message: error.message });
}

/**
 * `GET|POST <base>/login` and `POST <base>/logout` on `app` (registered under `base`): signing
 * in leads to `base`, signing out back to its form. Registers the form-body and cookie parsers
 * for `app`'s routes.
 */
export async function signInRoutes(app: FastifyInstance, options: AdminSessionOptions & { base: string; title: string }): Promise<void> {
  await app.register(formbody);
  await app.register(cookie);

  app.get('/login', async (_request, reply) => reply.type('text/html; charset=utf-8').send(signInPage(options.base, options.title)));

  app.post('/login', { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    try {
      // A sign-in from another site would sign the browser in as the attacker (login CSRF).
      const crossOrigin = crossOriginProblem(request);
      if (crossOrigin) throw forbidden(crossOrigin);
      const credentials = { username: String(body.username ?? ''), password: String(body.password ?? '') };
      const { session, expires_in } = await options.adminJobs.run('session.create', credentials, {
        actor: null, address: request.ip, requestId: request.id,
      }) as { session: string; expires_in: number };
      reply.setCookie(COOKIE, session, { ...sessionCookie(request), maxAge: expires_in });
      clearOldCookie(reply, request);
      return reply.redirect(options.base, 303);
    } catch (error) {
      const failure = GatewayError.from(error);
      setRetryHeaders(reply, failure);
      return reply.status(failure.status).type('text/html; charset=utf-8').send(signInPage(options.base, options.title, failure.message));
    }
  });

  app.post('/logout', { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const crossOrigin = crossOriginProblem(request);
    if (crossOrigin) return refuse(reply, request, forbidden(crossOrigin), options);
    const session = sessionOf(request);
    if (session) {
      await options.adminJobs.run('session.delete', { session }, { actor: null, address: request.ip, requestId: request.id });
    }
    reply.clearCookie(COOKIE, sessionCookie(request));
    clearOldCookie(reply, request);
    return reply.redirect(`${options.base}/login`, 303);
  });
}

export interface AdminGuardOptions {
  store: Store;
  /** The page family, for the sign-in form a refused browser gets. */
  base: string;
  title: string;
  /** The least role that may change something here (any method but GET and HEAD). */
  changeRole: number;
  changeRefusal: string;
  /** Told who is looking, for guards of their own further in. */
  onActor?: (request: FastifyRequest, actor: Actor) => void;
}

/** The guard of every page and call behind the sign-in: administrators only; changes as `changeRole` says. */
export function adminGuard(options: AdminGuardOptions): onRequestAsyncHookHandler {
  return async (request, reply) => {
    try {
      const actor = await actorOf(request, options.store, options.title);
      options.onActor?.(request, actor);
      request.actor = actor;
      if (actor.role < Role.admin) throw forbidden(`only administrators may open the ${options.title}`);
      const changes = request.method !== 'GET' && request.method !== 'HEAD';
      if (changes && actor.role < options.changeRole) throw forbidden(options.changeRefusal);
      // Only a browser's cookie rides along on a forged request; an access token never does.
      const crossOrigin = changes && hasSessionCookie(request) ? crossOriginProblem(request) : undefined;
      if (crossOrigin) throw forbidden(crossOrigin);
    } catch (error) {
      return refuse(reply, request, GatewayError.from(error), options);
    }
  };
}
