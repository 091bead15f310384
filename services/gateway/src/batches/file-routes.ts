/**
 * The OpenAI Files API, for batch input files and a batch's results: `POST /v1/files` (multipart,
 * streamed into PostgreSQL line by line), `GET /v1/files`, `GET /v1/files/{id}`,
 * `GET /v1/files/{id}/content` (streamed from the rows) and `DELETE /v1/files/{id}`.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { z } from 'zod';
import { badRequest, invalidApiKey, notFound, parseOrThrow, UserStatus } from '@gateway/contracts';
import { FileStore, orUnavailable } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import { openSpoolDir, SpoolBudget } from './line-spool.ts';
import { receiveUpload } from './multipart-upload.ts';
import { PerUserLimit } from '../intake/per-user-limit.ts';
import { databaseOf, type BatchApiOptions } from './batch-api-options.ts';

const listQuery = z.object({
  purpose: z.string().max(64).optional(),
  after: z.string().max(128).optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(10_000),
  order: z.enum(['asc', 'desc']).default('desc'),
});

const noFile = (id: string) => notFound(`No such File object: ${id}`, 'id');

/** Connections of a gateway's pool for uploads (main.ts). */
export const UPLOAD_CONNECTIONS = 8;
/**
 * Connections of a gateway's pool for downloads' lines larger than a page (main.ts): each is
 * held while its client reads the line, so slow clients of large lines wait for each other, not
 * other users' requests for the main pool.
 */
export const DOWNLOAD_CONNECTIONS = 4;
/** Uploads one user may have in flight on a gateway; past it, 429. */
const UPLOADS_PER_USER = 2;
/**
 * Downloads one user may have in flight on a gateway; past it, 429. Each holds a page of its
 * file until its client has read it: 8 slow downloads of one file of 10 MB lines, unbounded and
 * read 10 lines at a time, took the gateway from 295 MB to 4.2 GB.
 */
const DOWNLOADS_PER_USER = 2;
/** Other reads (lists, file objects) one user may have in flight on a gateway; past it, 429. */
export const READS_PER_USER = 4;

/**
 * An upload is a multipart form, refused from its headers otherwise: the route's limit is a file's
 * (FILE_MAX_BYTES), and a JSON body that large (150 MB, gzip-compressed to 150 KB) was inflated
 * and parsed whole, and held in memory, only to be refused by the handler.
 */
const multipartOnly = async (request: FastifyRequest) => {
  if (!/^multipart\/form-data\b/i.test(request.headers['content-type'] ?? '')) {
    throw badRequest('send the file as multipart/form-data, with the fields file and purpose', 'file');
  }
};

export async function fileRoutes(app: FastifyInstance, options: BatchApiOptions): Promise<void> {
  // The file's size is checked as its lines are read (jsonl-lines.ts), for a 413 that says so:
  // the parser's own limit only stops a byte past it.
  await app.register(multipart, { limits: { fileSize: options.files.maxBytes + 1, files: 1, fields: 8, fieldSize: 1024 }, throwFileSizeLimit: false });
  const files = () => new FileStore(databaseOf(options));
  // An upload is spooled to disk while its client sends (line-spool.ts), then written on a pool
  // of its own: a few at once per user, and the bytes of all of them at once bounded.
  const uploads = new PerUserLimit(UPLOADS_PER_USER, 'uploads');
  const spoolDir = await openSpoolDir(options.files.spoolDir);
  app.addHook('onClose', spoolDir.close);
  const spools = { dir: spoolDir.dir, budget: new SpoolBudget(options.files.spoolBytes ?? Infinity) };
  const uploadStore = () => new FileStore(options.uploadDatabase ?? databaseOf(options));
  const downloads = new PerUserLimit(DOWNLOADS_PER_USER, 'downloads of file contents');
  const reads = new PerUserLimit(READS_PER_USER, 'reads of files');

  app.post('/files', { bodyLimit: options.files.maxBytes + 1024 * 1024, onRequest: multipartOnly }, async (request) => {
    const userId = keyHolderOf(request).userId;
    // Its key was checked when the form began, up to BODY_TIMEOUT_MS before: its user is read
    // again under the lock that deleting a user takes, so a file sent while its user was deleted
    // is never kept (no one could see or remove it).
    const users = options.users;
    const owned = users && (async () => {
      if ((await users.get(userId))?.status !== UserStatus.enabled) throw invalidApiKey("this API key's user was deleted or disabled while the file was sent");
    });
    return uploads.run(userId, () => orUnavailable(receiveUpload(request, uploadStore(), userId, options.files, spools, owned)));
  });

  app.get('/files', async (request) => {
    const query = parseOrThrow(listQuery, request.query);
    const userId = keyHolderOf(request).userId;
    const page = await reads.run(userId, () => orUnavailable(files().list(userId, query)));
    return { object: 'list', data: page.data, first_id: page.data[0]?.id ?? null, last_id: page.data.at(-1)?.id ?? null, has_more: page.hasMore };
  });

  app.get('/files/:id', async (request) => {
    const { id } = request.params as { id: string };
    const userId = keyHolderOf(request).userId;
    const file = await reads.run(userId, () => orUnavailable(files().get(id, userId)));
    if (!file) throw noFile(id);
    return file;
  });

  app.get('/files/:id/content', async (request, reply) => {
    const { id } = request.params as { id: string };
    const store = new FileStore(databaseOf(options), options.downloadDatabase ?? databaseOf(options));
    const userId = keyHolderOf(request).userId;
    // Held until the client has the whole content or is gone, not only until the answer begins.
    const release = downloads.take(userId);
    reply.raw.once('close', release);
    const file = await orUnavailable(store.get(id, userId));
    if (!file) throw noFile(id);
    reply.type('application/octet-stream');
    reply.header('content-disposition', `attachment; filename="${file.filename.replace(/[^\w.-]/g, '_')}"`);
    // Read a page at a time as the client takes them (file-lines.ts): the next page is read
    // only once the socket has drained the last.
    return reply.send(Readable.from(store.content(id, userId), { objectMode: false, highWaterMark: 16 * 1024 }));
  });

  app.delete('/files/:id', async (request) => {
    const { id } = request.params as { id: string };
    if (!(await orUnavailable(files().remove(id, keyHolderOf(request).userId)))) throw noFile(id);
    return { id, object: 'file', deleted: true };
  });
}
