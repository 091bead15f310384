/**
 * The queue dashboard (bull-board) at /admin/queues, for administrators only, and beside it a
 * page of every user's batches and their progress (/admin/queues/batches). A browser signs
 * in with a form that sets an HttpOnly session cookie; an API access token works too. Anyone
 * else gets 401 (and the sign-in form), never a byte of the board, not even its static files.
 * Changing jobs (retry, remove, clean…) is for root; other administrators only look.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { forbidden, GatewayError, loginBody, parseOrThrow, QueueName, unauthenticated, Role, type Actor, type AdminJobPayload, type AdminResult } from '@gateway/contracts';
import type { JobClient } from '@gateway/queue';
import type { Store } from '@gateway/store';
import type { AdminJobs } from '../admin-jobs.ts';
import { authenticateAccessToken } from '../auth/access-token.ts';
import type { BatchOverview } from '../batch-overview.ts';
import { batchErrorPage, batchPageView, batchProgressPage, BATCH_PAGE_HEADERS, overviewQuery } from '../dashboard/batch-progress-page.ts';
import { escapeHtml } from '../dashboard/html.ts';
import { crossOriginProblem } from '../dashboard/same-origin.ts';
import { shownJobData, type PayloadDisplay } from '../dashboard/shown-job-data.ts';
import { setRetryHeaders } from '../error-formats.ts';

export const DASHBOARD_PATH = '/admin/queues';
const COOKIE = 'gw_dashboard';

export interface DashboardOptions {
  jobs: JobClient;
  store: Store;
  adminJobs: AdminJobs;
  timeoutMs: number;
  bodyLimitBytes: number;
  /** How much of a job's payload (prompts, speech text) the board shows: DASHBOARD_PAYLOADS. */
  payloads: PayloadDisplay;
  /** Every user's batches, for the batch page. */
  batches: BatchOverview;
}

/** A session this gateway could have set (43 base64url characters); any other value is none. */
const SESSION_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const sessionOf = (request: FastifyRequest): string | undefined => {
  const value = request.cookies[COOKIE];
  return value !== undefined && SESSION_SHAPE.test(value) ? value : undefined;
};

/**
 * The session cookie: never readable by scripts, sent only to the board, and only over HTTPS
 * when the request came over HTTPS (behind a proxy that ends TLS: with TRUST_PROXY set, its
 * X-Forwarded-Proto says so).
 */
const sessionCookie = (request: FastifyRequest) => ({ httpOnly: true, sameSite: 'strict', path: DASHBOARD_PATH, secure: request.protocol === 'https' }) as const;

/** True when the request carries the board's session cookie (a credential the browser adds by itself). */
const hasSessionCookie = (request: FastifyRequest) => request.cookies[COOKIE] !== undefined;

async function actorOf(request: FastifyRequest, store: Store): Promise<Actor> {
  const session = sessionOf(request);
  if (session) {
    const owner = await store.sessions.userOf(session);
    const user = owner ? await store.users.get(owner.userId) : null;
    // A session outlives neither a new password nor a disabled or deleted user.
    if (user && user.status === 1 && user.session_epoch === owner!.epoch) return { id: user.id, role: user.role };
  }
  if (request.headers.authorization) return authenticateAccessToken(store.users, request.headers);
  throw unauthenticated('sign in to see the queue dashboard');
}

function signInPage(message = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · queue dashboard</title>
<style>body{font-family:system-ui,sans-serif;background:#f4f5f7;display:flex;justify-content:center;padding-top:10vh}
form{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;min-width:18rem}
label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin-top:1.2rem;padding:.6rem 1rem;width:100%}.error{color:#b00020}</style></head>
<body><form method="post" action="${DASHBOARD_PATH}/login"><h1>Queue dashboard</h1>
${message ? `<p class="error" role="alert">${escapeHtml(message)}</p>` : ''}
<label for="username">Username</label><input id="username" name="username" autocomplete="username" required>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></body></html>`;
}

function refuse(reply: FastifyReply, request: FastifyRequest, error: GatewayError) {
  const wantsHtml = request.method === 'GET' && (request.headers.accept ?? '').includes('text/html');
  if (wantsHtml) {
    return reply.status(error.status).type('text/html; charset=utf-8').send(signInPage(error.status === 403 ? error.message : ''));
  }
  return reply.status(error.status).send({ success: false, message: error.message });
}

export async function dashboardRoutes(app: FastifyInstance, options: DashboardOptions): Promise<void> {
  // The sign-in form's body and the session cookie, for the board's routes only.
  await app.register(formbody);
  await app.register(cookie);

  app.get('/login', async (_request, reply) => reply.type('text/html; charset=utf-8').send(signInPage()));

  app.post('/login', { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    try {
      // A sign-in from another site would sign the browser in as the attacker (login CSRF).
      const crossOrigin = crossOriginProblem(request);
      if (crossOrigin) throw forbidden(crossOrigin);
      const credentials = parseOrThrow(loginBody, { username: String(body.username ?? ''), password: String(body.password ?? '') });
      const prepared = await options.adminJobs.prepare('session.create', credentials, request.ip);
      const result = await options.jobs.request<AdminJobPayload, AdminResult>(
        QueueName.admin,
        { operation: 'session.create', actor: null, input: prepared.input },
        { requestId: request.id, timeoutMs: options.timeoutMs },
      );
      const { expires_in } = result.data as { expires_in: number };
      const session = prepared.reveal!.session!;
      reply.setCookie(COOKIE, session, { ...sessionCookie(request), maxAge: expires_in });
      return reply.redirect(DASHBOARD_PATH, 303);
    } catch (error) {
      const failure = GatewayError.from(error);
      setRetryHeaders(reply, failure);
      return reply.status(failure.status).type('text/html; charset=utf-8').send(signInPage(failure.message));
    }
  });

  app.post('/logout', { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const crossOrigin = crossOriginProblem(request);
    if (crossOrigin) return refuse(reply, request, forbidden(crossOrigin));
    const session = sessionOf(request);
    if (session) {
      const { input } = await options.adminJobs.prepare('session.delete', { session }, request.ip);
      await options.jobs.request(QueueName.admin, { operation: 'session.delete', actor: null, input } satisfies AdminJobPayload, {
        requestId: request.id, timeoutMs: options.timeoutMs,
      });
    }
    reply.clearCookie(COOKIE, sessionCookie(request));
    return reply.redirect(`${DASHBOARD_PATH}/login`, 303);
  });

  // Everything else under the prefix is the board: administrators only, changes for root only.
  // Who is looking, by request (bull-board hands its handlers the request's headers object).
  const viewers = new WeakMap<object, Actor>();
  app.register(async (board) => {
    board.addHook('onRequest', async (request, reply) => {
      let actor: Actor;
      try {
        actor = await actorOf(request, options.store);
        viewers.set(request.raw.headers, actor);
        if (actor.role < Role.admin) throw forbidden('only administrators may open the queue dashboard');
        const changesJobs = request.method !== 'GET' && request.method !== 'HEAD';
        if (changesJobs && actor.role < Role.root) throw forbidden('the dashboard is read-only for administrators; only root may change jobs');
        // Only a browser's cookie rides along on a forged request; an access token never does.
        const crossOrigin = changesJobs && hasSessionCookie(request) ? crossOriginProblem(request) : undefined;
        if (crossOrigin) throw forbidden(crossOrigin);
      } catch (error) {
        return refuse(reply, request, GatewayError.from(error));
      }
    });

    // The batch page: under the board's path, so the session cookie (path /admin/queues) and
    // this guard cover it as they do the board. Read-only, like the board for administrators.
    board.get('/batches', async (request, reply) => {
      const view = batchPageView(request.query);
      reply.headers(BATCH_PAGE_HEADERS).type('text/html; charset=utf-8');
      try {
        return batchProgressPage(DASHBOARD_PATH, view, await options.batches.page(overviewQuery(view)));
      } catch (error) {
        if (!(error instanceof GatewayError)) request.log.error({ err: error, reqId: request.id }, 'unhandled error');
        const failure = GatewayError.from(error);
        setRetryHeaders(reply, failure);
        return reply.status(failure.status).send(batchErrorPage(DASHBOARD_PATH, failure.message));
      }
    });

    const serverAdapter = new FastifyAdapter();
    serverAdapter.setBasePath(DASHBOARD_PATH);
    // Every shard of every queue; shards past the first are shown as `s<i>:<queue>`.
    const adapters = Object.values(QueueName).flatMap((name) => options.jobs.shardsOf(name).map((queue, i) => {
      const adapter = new BullMQAdapter(queue, { allowRetries: true, prefix: i === 0 ? '' : `s${i}:` });
      // Jobs hold no secrets in clear, and the board shows nothing derived from one either
      // (digests, hashes, encrypted keys); prompts and speech text as DASHBOARD_PAYLOADS says.
      adapter.setFormatter('data', (data) => shownJobData(data, options.payloads));
      adapter.setFormatter('returnValue', (value) => shownJobData(value, options.payloads));
      // Management jobs name users, roles and limits: root's business only. Other administrators
      // do not see the admin queue at all (bull-board checks this on every route of a queue).
      if (name === QueueName.admin) adapter.setVisibilityGuard((request) => viewers.get(request.headers)?.role === Role.root);
      return adapter;
    }));
    createBullBoard({
      queues: adapters,
      serverAdapter,
      options: { uiConfig: { boardTitle: 'AI gateway queues', miscLinks: [{ text: 'Batches', url: `${DASHBOARD_PATH}/batches` }] } },
    });
    await board.register(serverAdapter.registerPlugin());
  });
}
