/**
 * The OpenAI Batch API: `POST /v1/batches`, `GET /v1/batches/{id}`, `GET /v1/batches` and
 * `POST /v1/batches/{id}/cancel`. A batch is a row in PostgreSQL; a batch worker validates it,
 * feeds its lines to the model queues and writes their results (services/batch-worker).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { badRequest, batchCreateSchema, notFound, parseOrThrow } from '@gateway/contracts';
import { BatchStore, FileStore, orUnavailable } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import { PerUserLimit } from '../intake/per-user-limit.ts';
import { READS_PER_USER } from './file-routes.ts';
import { databaseOf, type BatchApiOptions } from './batch-api-options.ts';

const listQuery = z.object({
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});

const noBatch = (id: string) => notFound(`No batch found with id '${id}'.`, 'batch_id');

export function batchRoutes(app: FastifyInstance, options: BatchApiOptions): void {
  const stores = () => {
    const db = databaseOf(options);
    return { batches: new BatchStore(db), files: new FileStore(db) };
  };
  const reads = new PerUserLimit(READS_PER_USER, 'reads of batches');

  app.post('/batches', async (request) => {
    const holder = keyHolderOf(request);
    const body = parseOrThrow(batchCreateSchema, request.body);
    const { batches, files } = stores();
    const input = await orUnavailable(files.get(body.input_file_id, holder.userId));
    if (!input) throw notFound(`No file found with id '${body.input_file_id}'.`, 'input_file_id');
    if (input.purpose !== 'batch') {
      throw badRequest(`file '${input.id}' has purpose '${input.purpose}'; a batch's input file must have purpose 'batch'`, 'input_file_id');
    }
    return orUnavailable(batches.create({ userId: holder.userId, tokenId: holder.tokenId }, body, options.completionWindowMs, options.userMaxOpenBatches, input.bytes, options.files.userMaxBytes));
  });

  app.get('/batches/:id', async (request) => {
    const { id } = request.params as { id: string };
    const userId = keyHolderOf(request).userId;
    const batch = await reads.run(userId, () => orUnavailable(stores().batches.get(id, userId)));
    if (!batch) throw noBatch(id);
    return batch;
  });

  // A page is cut short, has_more set, when its batches pass LIST_MAX_BYTES (batch-list.ts).
  app.get('/batches', async (request) => {
    const query = parseOrThrow(listQuery, request.query);
    const userId = keyHolderOf(request).userId;
    const page = await reads.run(userId, () => orUnavailable(stores().batches.list({ userId, after: query.after, limit: query.limit })));
    return { object: 'list', data: page.data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore };
  });

  app.post('/batches/:id/cancel', async (request) => {
    const { id } = request.params as { id: string };
    const batch = await orUnavailable(stores().batches.cancel(id, keyHolderOf(request).userId));
    if (!batch) throw noBatch(id);
    return batch;
  });
}
