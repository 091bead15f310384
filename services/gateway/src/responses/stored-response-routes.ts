/**
 * A user's stored responses: `GET /v1/responses/{id}` (with `stream=true`, a streamed background
 * one's events again, after `starting_after`), `DELETE /v1/responses/{id}`,
 * `GET /v1/responses/{id}/input_items` (a page of them, newest first unless `order=asc`) and
 * `POST /v1/responses/{id}/cancel` (a background one still queued or running). Another user's
 * id, an expired one and an unknown one are the same 404. A background one whose run was lost
 * with its gateway reads as `failed` (run-lease.ts). Each user has a few of these reads at once
 * on a gateway, and a few stream followers (per user and per response): past them, a 429.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { badRequest, notFound, parseOrThrow, type ResponsesResponse } from '@gateway/contracts';
import { orUnavailable, type ResponseStore } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import type { BackgroundRuns } from './background-runs.ts';
import { followEvents } from './event-follower.ts';
import { currentResponse } from './run-lease.ts';
import { PerUserLimit } from '../intake/per-user-limit.ts';
import type { BatchApiOptions } from '../batches/batch-api-options.ts';

/** Stored responses: the database they are kept in (none without DATABASE_URL) and for how long (RESPONSE_RETENTION_DAYS). */
export interface StoredResponsesOptions {
  database?: BatchApiOptions['database'];
  retentionDays: number;
}

const params = z.object({ id: z.string().min(1).max(128) });
const retrieveQuery = z.object({
  stream: z.enum(['true', 'false']).optional(),
  starting_after: z.coerce.number().int().min(-1).max(2_000_000_000).default(-1),
});
const itemsQuery = z.object({
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
});

/** Most reads, deletes and cancels of stored responses one user may have at once on this gateway (each holds a connection of the shared pool). */
export const READS_PER_USER = 4;

const noResponse = (id: string) => notFound(`Response with id '${id}' not found.`, 'response_id');

export function storedResponseRoutes(app: FastifyInstance, store: () => ResponseStore, background: BackgroundRuns, timeoutMs: number): void {
  const reads = new PerUserLimit(READS_PER_USER, 'reads of stored responses');

  app.get('/responses/:id', async (request, reply) => {
    const { id } = parseOrThrow(params, request.params);
    const query = parseOrThrow(retrieveQuery, request.query);
    const userId = keyHolderOf(request).userId;
    const found = await reads.run(userId, () => orUnavailable(currentResponse(store(), id, userId, background.lease)));
    if (!found) throw noResponse(id);
    if (query.stream !== 'true') return found.response;
    if (found.response.background !== true || !found.streamed) throw badRequest('Only a response created with background: true and stream: true can be streamed again.', 'stream');
    const place = background.followers.take(userId, id);
    return followEvents(reply, store(), id, userId, query.starting_after, timeoutMs, background.lease, place);
  });

  app.delete('/responses/:id', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    const userId = keyHolderOf(request).userId;
    if (!(await reads.run(userId, () => orUnavailable(store().remove(id, userId))))) throw noResponse(id);
    return { id, object: 'response', deleted: true };
  });

  app.post('/responses/:id/cancel', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    const userId = keyHolderOf(request).userId;
    return reads.run(userId, () => cancelled(store(), background, id, userId));
  });

  app.get('/responses/:id/input_items', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    const query = parseOrThrow(itemsQuery, request.query);
    const userId = keyHolderOf(request).userId;
    const page = await reads.run(userId, () => orUnavailable(store().inputItemsPage(id, userId, query)));
    if (!page) throw noResponse(id);
    const { data, hasMore } = page;
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  });
}

/** Cancels a background response still queued or running; an ended one is refused, a response without `background` too. */
async function cancelled(store: ResponseStore, background: BackgroundRuns, id: string, userId: number): Promise<ResponsesResponse> {
  const found = await orUnavailable(store.get(id, userId));
  if (!found) throw noResponse(id);
  if (found.response.background !== true) throw badRequest('Only responses created with background: true can be cancelled.', 'response_id');
  if (await orUnavailable(store.setStatus(id, userId, 'cancelled'))) {
    background.cancel(id);
    return { ...found.response, status: 'cancelled' };
  }
  const now = await orUnavailable(store.get(id, userId));
  if (now?.response.status === 'cancelled') return now.response;
  throw badRequest(`Cannot cancel a response with status '${now?.response.status ?? found.response.status}'.`, 'response_id');
}
