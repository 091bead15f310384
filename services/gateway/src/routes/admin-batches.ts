/**
 * The management API's batches, for administrators: every user's batches listed (`GET
 * /api/batch/`, new-api's pages), one read (`GET /api/batch/:id`) or cancelled (`POST
 * /api/batch/:id/cancel`), whoever owns it. Answered by the gateway from PostgreSQL
 * (`batch-overview.ts`), not by the admin worker.
 */
import type { FastifyInstance } from 'fastify';
import { batchIdParam, listBatchesQuery, parseOrThrow } from '@gateway/contracts';
import { administratorHook } from '../auth/request-auth.ts';
import type { BatchOverview } from '../batch-overview.ts';
import type { UserStore } from '@gateway/store';

export interface AdminBatchRoutesOptions {
  users: UserStore;
  overview: BatchOverview;
}

const answer = (data: unknown) => ({ success: true, message: '', data });

export function adminBatchRoutes(app: FastifyInstance, options: AdminBatchRoutesOptions): void {
  app.addHook('onRequest', administratorHook(options.users));

  app.get('/batch/', async (request) => answer(await options.overview.page(parseOrThrow(listBatchesQuery, { ...(request.query as object) }))));

  app.get('/batch/:id', async (request) => answer(await options.overview.get(parseOrThrow(batchIdParam, { ...(request.params as object) }).id)));

  app.post('/batch/:id/cancel', async (request) => answer(await options.overview.cancel(parseOrThrow(batchIdParam, { ...(request.params as object) }).id)));
}
