/**
 * The queue dashboard (bull-board) at /admin/queues, for administrators only, and beside it a
 * page of every user's batches and their progress (/admin/queues/batches). A browser signs
 * in with the administrators' session (admin-session.ts: the console's too); an API access
 * token works as well. Anyone else gets 401 (and the sign-in form), never a byte of the board,
 * not even its static files. Changing jobs (retry, remove, clean…) is for root; other
 * administrators only look.
 */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import { GatewayError, QueueName, Role, type Actor } from '@gateway/contracts';
import type { JobClient } from '@gateway/queue';
import type { BatchOverview } from '../batches/batch-overview.ts';
import { adminGuard, signInRoutes, type AdminSessionOptions } from './admin-session.ts';
import { boardPageHook } from './board-page.ts';
import { batchErrorPage, batchPageView, batchProgressPage, BATCH_PAGE_HEADERS, overviewQuery } from './batch-progress-page.ts';
import { shownJobData, type PayloadDisplay } from './shown-job-data.ts';
import { setRetryHeaders } from '../http/error-formats.ts';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions extends AdminSessionOptions {
  /** Every queue's shards, for the board. */
  jobs: JobClient;
  /** How much of a job's payload (prompts, speech text) the board shows: DASHBOARD_PAYLOADS. */
  payloads: PayloadDisplay;
  /** Every user's batches, for the batch page. */
  batches: BatchOverview;
}

export async function dashboardRoutes(app: FastifyInstance, options: DashboardOptions): Promise<void> {
  const page = { base: DASHBOARD_PATH, title: 'queue dashboard' };
  await signInRoutes(app, { ...options, ...page });

  // Everything else under the prefix is the board: administrators only, changes for root only.
  // Who is looking, by request (bull-board hands its handlers the request's headers object).
  const viewers = new WeakMap<object, Actor>();
  app.register(async (board) => {
    board.addHook('onRequest', adminGuard({
      ...page,
      store: options.store,
      changeRole: Role.root,
      changeRefusal: 'the dashboard is read-only for administrators; only root may change jobs',
      onActor: (request, actor) => viewers.set(request.raw.headers, actor),
    }));
    // Its pages fetch nothing from another origin (its template's web fonts left out).
    board.addHook('onSend', boardPageHook);

    // The batch page: under the board's path, so the session cookie (path /admin) and
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
