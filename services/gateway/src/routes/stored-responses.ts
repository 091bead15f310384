/**
 * A user's stored responses: `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}` and
 * `GET /v1/responses/{id}/input_items` (a page of them, newest first unless `order=asc`). Another
 * user's id, an expired one and an unknown one are the same 404.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { notFound, parseOrThrow } from '@gateway/contracts';
import { orUnavailable, type ResponseStore } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';

const params = z.object({ id: z.string().min(1).max(128) });
const itemsQuery = z.object({
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  order: z.enum(['asc', 'desc']).default('desc'),
});

const noResponse = (id: string) => notFound(`Response with id '${id}' not found.`, 'response_id');

export function storedResponseRoutes(app: FastifyInstance, store: () => ResponseStore): void {
  app.get('/responses/:id', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    const found = await orUnavailable(store().get(id, keyHolderOf(request).userId));
    if (!found) throw noResponse(id);
    return found.response;
  });

  app.delete('/responses/:id', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    if (!(await orUnavailable(store().remove(id, keyHolderOf(request).userId)))) throw noResponse(id);
    return { id, object: 'response', deleted: true };
  });

  app.get('/responses/:id/input_items', async (request) => {
    const { id } = parseOrThrow(params, request.params);
    const query = parseOrThrow(itemsQuery, request.query);
    const found = await orUnavailable(store().get(id, keyHolderOf(request).userId));
    if (!found) throw noResponse(id);
    const ordered = query.order === 'asc' ? found.inputItems : [...found.inputItems].reverse();
    const from = query.after ? ordered.findIndex((item) => item.id === query.after) + 1 : 0;
    const data = ordered.slice(from, from + query.limit);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: from + query.limit < ordered.length };
  });
}
