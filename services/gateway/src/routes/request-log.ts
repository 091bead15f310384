/**
 * The request log's management API, in new-api's envelope: `GET /api/log/` (administrators:
 * every user's requests, filtered and paged), `GET /api/log/self` (a signed-in user's own), and
 * `GET /api/log/stat` (sums over the same filters; a common user's narrowed to its own).
 * Answered by the gateway from PostgreSQL, as the batch overview is.
 */
import type { FastifyInstance } from 'fastify';
import { forbidden, listLogsQuery, logStatQuery, notConfigured, parseOrThrow, Role } from '@gateway/contracts';
import { orUnavailable, RequestLogQuery, type Database } from '@gateway/database';
import type { UserStore } from '@gateway/store';
import { accessTokenHook } from '../auth/request-auth.ts';

export interface RequestLogRoutesOptions {
  users: UserStore;
  /** PostgreSQL; unset, the routes answer 503 (the gateway runs without DATABASE_URL). */
  database?: Database;
}

const answer = (data: unknown) => ({ success: true, message: '', data });

/** Reads of the request log, or a 503 saying this gateway runs without PostgreSQL. */
export function requestLogOf(database: Database | undefined): RequestLogQuery {
  if (!database) throw notConfigured('the request log needs PostgreSQL: this gateway runs without DATABASE_URL');
  return new RequestLogQuery(database);
}

export function requestLogRoutes(app: FastifyInstance, options: RequestLogRoutesOptions): void {
  app.addHook('onRequest', accessTokenHook(options.users, () => true));
  const query = () => requestLogOf(options.database);

  app.get('/log/', async (request) => {
    if (request.actor!.role < Role.admin) throw forbidden('insufficient privileges for this operation');
    return answer(await orUnavailable(query().page(parseOrThrow(listLogsQuery, { ...(request.query as object) }))));
  });

  app.get('/log/self', async (request) => {
    const filters = parseOrThrow(listLogsQuery, { ...(request.query as object) });
    return answer(await orUnavailable(query().page({ ...filters, only_user: request.actor!.id })));
  });

  app.get('/log/stat', async (request) => {
    const filters = parseOrThrow(logStatQuery, { ...(request.query as object) });
    const own = request.actor!.role < Role.admin ? { only_user: request.actor!.id } : {};
    return answer(await orUnavailable(query().stat({ ...filters, ...own })));
  });
}
