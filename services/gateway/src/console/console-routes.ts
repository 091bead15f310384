/**
 * The operations console at /admin: one page for administrators that answers at a glance which
 * channel is full, cooling down or auto-disabled, how the queues drain and who serves them, and
 * what happened to a request, with charts from the request log. Behind the same sign-in as the
 * queue dashboard (bull-board, at /admin/queues, linked from the page), or an administrator's
 * access token. Its calls:
 *
 * - `GET /admin/api/overview`: queues, channels and batches in progress (console-overview.ts);
 * - `GET /admin/api/log` and `/admin/api/log/stat`: the request log, as `/api/log/` and
 *   `/api/log/stat` answer it;
 * - `GET /admin/api/spend` and `/admin/api/prices`: spend per key, user and model over the UTC
 *   day and month, and the price table with the models served at no price (console-spend.ts);
 * - `PUT /admin/api/channel/` (`{id, status}`: enable or disable one channel) and
 *   `POST /admin/api/channel/tag/{enabled,disabled}`: the management API's operations, run on
 *   the admin queue with the same rules.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AdminOperationName } from '@gateway/admin-operations';
import { listLogsQuery, logStatQuery, parseOrThrow, Role, tagBody } from '@gateway/contracts';
import type { Database } from '@gateway/database';
import type { BatchOverview } from '../batches/batch-overview.ts';
import { ConsoleOverview } from './console-overview.ts';
import { ConsoleSpend } from './console-spend.ts';
import { consolePage, loadConsoleAssets } from './console-assets.ts';
import { ADMIN_PATH, adminGuard, signInRoutes, type AdminSessionOptions } from '../dashboard/admin-session.ts';
import type { OperationsSnapshot } from '../management/operations-snapshot.ts';
import { answerAdminOperation } from '../management/admin-routes.ts';
import { logReads, requestLogOf } from '../management/request-log-routes.ts';

export interface ConsoleOptions extends AdminSessionOptions {
  operations: OperationsSnapshot;
  batches: BatchOverview;
  /** PostgreSQL, for the request log; without it the log's parts answer 503. */
  database?: Database;
}

const answer = (data: unknown) => ({ success: true, message: '', data });

/**
 * The channel changes the console makes: the management API's, by the same operations, and no
 * more than enabling and disabling (a channel's key, address or models are changed through
 * `/api/channel/`, not from a browser session).
 */
const actions: [method: 'PUT' | 'POST', path: string, operation: AdminOperationName, input: z.ZodType][] = [
  ['PUT', '/api/channel/', 'channel.update', z.strictObject({ id: z.number().int().positive(), status: z.union([z.literal(1), z.literal(2)]) })],
  ['POST', '/api/channel/tag/disabled', 'channel.disableTag', tagBody],
  ['POST', '/api/channel/tag/enabled', 'channel.enableTag', tagBody],
];

export async function consoleRoutes(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const page = { base: ADMIN_PATH, title: 'operations console' };
  await signInRoutes(app, { ...options, ...page });
  const assets = loadConsoleAssets();
  const shell = consolePage(ADMIN_PATH);
  const overview = new ConsoleOverview(options.operations, () => app.queueBacklog, options.batches, options.database);
  const log = () => requestLogOf(options.database);
  const spend = new ConsoleSpend(options.store, options.database);

  app.register(async (pages) => {
    // Administrators look and act as the management API lets them; root's rules are the admin worker's.
    pages.addHook('onRequest', adminGuard({ ...page, store: options.store, changeRole: Role.admin, changeRefusal: 'only administrators may change channels' }));

    pages.get('/', async (_request, reply) => reply.headers(shell.headers).type('text/html; charset=utf-8').send(shell.html));

    pages.get<{ Params: { name: string } }>('/assets/:name', async (request, reply) => {
      const file = assets.get(request.params.name);
      if (!file) return reply.status(404).send({ success: false, message: 'no such file' });
      reply.headers({ etag: file.etag, 'cache-control': 'private, max-age=300', 'x-content-type-options': 'nosniff' }).type(file.type);
      if (request.headers['if-none-match'] === file.etag) return reply.status(304).send();
      return reply.send(file.body);
    });

    pages.get('/api/overview', async () => answer(await overview.read()));

    // Counted with the management API's reads of the log, and one past its time limit a 503 that says so.
    pages.get('/api/log', async (request) => answer(await logReads.run(request.actor!, () => log().page(parseOrThrow(listLogsQuery, { ...(request.query as object) })))));

    pages.get('/api/log/stat', async (request) => answer(await logReads.run(request.actor!, () => log().stat(parseOrThrow(logStatQuery, { ...(request.query as object) })))));

    pages.get('/api/spend', async () => answer(await (spend.readSpend() ?? log().spend())));

    pages.get('/api/prices', async () => answer(await spend.readPrices()));

    for (const [method, url, operation, input] of actions) {
      pages.route({
        method,
        url,
        bodyLimit: options.bodyLimitBytes,
        handler: async (request: FastifyRequest) => answerAdminOperation(options.adminJobs, request, operation, parseOrThrow(input, request.body)),
      });
    }
  });
}
