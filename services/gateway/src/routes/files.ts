/**
 * The OpenAI Files API, for batch input files and a batch's results: `POST /v1/files` (multipart,
 * streamed into PostgreSQL line by line), `GET /v1/files`, `GET /v1/files/{id}`,
 * `GET /v1/files/{id}/content` (streamed from the rows) and `DELETE /v1/files/{id}`.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import { z } from 'zod';
import { badRequest, GatewayError, parseOrThrow } from '@gateway/contracts';
import { FileStore, orUnavailable } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import { jsonlLines } from '../files/jsonl-lines.ts';
import { databaseOf, type BatchApiOptions } from './batch-api-options.ts';

const listQuery = z.object({
  purpose: z.string().max(64).optional(),
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
  order: z.enum(['asc', 'desc']).default('desc'),
});

const notFound = (id: string) => new GatewayError({ status: 404, code: 'not_found', message: `No such File object: ${id}`, param: 'id' });

export async function fileRoutes(app: FastifyInstance, options: BatchApiOptions): Promise<void> {
  await app.register(multipart, { limits: { fileSize: options.files.maxBytes, files: 1, fields: 8, fieldSize: 1024 } });
  const files = () => new FileStore(databaseOf(options));

  app.post('/files', { bodyLimit: options.files.maxBytes + 1024 * 1024 }, async (request) => {
    const holder = keyHolderOf(request);
    if (!request.isMultipart()) throw badRequest('send the file as multipart/form-data, with the fields file and purpose', 'file');
    const store = files();
    let purpose = '';
    let uploading: Promise<unknown> | undefined;
    const partsRead = Promise.withResolvers<void>();
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (part.fieldname === 'purpose') purpose = String(part.value);
        continue;
      }
      if (part.fieldname !== 'file' || uploading) {
        part.file.resume();
        continue;
      }
      let bytes = 0;
      // Not awaited here: the form's fields after the file (the SDKs send purpose last) are read
      // while the lines are written; the transaction ends once the whole form is read.
      uploading = store.upload(holder.userId, part.filename || 'upload.jsonl', jsonlLines(part.file, options.files.maxLines, (n) => (bytes += n)), async () => {
        await partsRead.promise;
        if (part.file.truncated) throw new GatewayError({ status: 413, code: 'payload_too_large', message: `the file is larger than ${options.files.maxBytes} bytes, the most a file may be`, param: 'file' });
        if (purpose !== 'batch') throw badRequest(`purpose must be "batch" (the only purpose this gateway stores files for), not "${purpose.slice(0, 64)}"`, 'purpose');
        return { bytes, purpose };
      });
      // A refused upload stops reading its lines: the rest of the form is drained, so the answer can go.
      uploading.catch(() => part.file.resume());
    }
    partsRead.resolve();
    if (!uploading) throw badRequest('no file: send it in the multipart field "file"', 'file');
    return orUnavailable(uploading);
  });

  app.get('/files', async (request) => {
    const query = parseOrThrow(listQuery, request.query);
    const page = await orUnavailable(files().list(keyHolderOf(request).userId, query));
    return { object: 'list', data: page.data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore };
  });

  app.get('/files/:id', async (request) => {
    const { id } = request.params as { id: string };
    const file = await orUnavailable(files().get(id, keyHolderOf(request).userId));
    if (!file) throw notFound(id);
    return file;
  });

  app.get('/files/:id/content', async (request, reply) => {
    const { id } = request.params as { id: string };
    const store = files();
    const userId = keyHolderOf(request).userId;
    const file = await orUnavailable(store.get(id, userId));
    if (!file) throw notFound(id);
    reply.type('application/octet-stream');
    reply.header('content-disposition', `attachment; filename="${file.filename.replace(/[^\w.-]/g, '_')}"`);
    return reply.send(Readable.from(store.content(id, userId), { objectMode: false }));
  });

  app.delete('/files/:id', async (request) => {
    const { id } = request.params as { id: string };
    if (!(await orUnavailable(files().remove(id, keyHolderOf(request).userId)))) throw notFound(id);
    return { id, object: 'file', deleted: true };
  });
}
