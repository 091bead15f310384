/**
 * The management API's batches, for administrators: every user's batches listed (`GET
 * /api/batch/`, new-api's pages), one read (`GET /api/batch/:id`) or cancelled (`POST
 * /api/batch/:id/cancel`), whoever owns it. Answered by the gateway from PostgreSQL
 * (`batch-overview.ts`), not by the admin worker.
 */
import type { FastifyInstance } from 'fastify';
import { batchIdParam, forbidden, listBatchesQuery, parseOrThrow, Role } from '@gateway/contracts';
import { administratorHook } from '../auth/request-auth.ts';
import type { BatchOverview } from '../batches/batch-overview.ts';
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

  // As with users, an administrator acts only on those below them: another administrator's or
  // root's batch is theirs (and root's) to cancel. Who cancelled is logged.
  app.post('/batch/:id/cancel', async (request) => {
    const { id } = parseOrThrow(batchIdParam, { ...(request.params as object) });
    const actor = request.actor!;
    const batch = await options.overview.get(id);
    if (batch.user_id !== actor.id && actor.role < Role.root) {
      const owner = await options.users.get(batch.user_id);
      if (owner && owner.role >= actor.role) throw forbidden("you cannot cancel the batch of a user whose role is equal to or above your own");
    }
    request.log.info({ batch: id, actor: actor.id, owner: batch.user_id }, 'batch cancelled by an administrator');
    return answer(await options.overview.cancel(id));
  });
}
