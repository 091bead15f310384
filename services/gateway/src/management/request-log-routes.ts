/**
 * The request log's management API, in new-api's envelope: `GET /api/log/` (administrators:
 * every user's requests, filtered and paged), `GET /api/log/self` (a signed-in user's own), and
 * `GET /api/log/stat` (sums over the same filters; a common user's narrowed to its own).
 * Answered by the gateway from PostgreSQL, as the batch overview is.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, listLogsQuery, logStatQuery, notConfigured, overloaded, parseOrThrow, Role } from '@gateway/contracts';
import { isStatementTimeout, orUnavailable, RequestLogQuery, type Database, type RequestLogEntry } from '@gateway/database';
import type { UserStore } from '@gateway/store';
import { accessTokenHook } from '../auth/request-auth.ts';
import { LogReadTurns } from './log-read-turns.ts';

export interface RequestLogRoutesOptions {
  users: UserStore;
  /** PostgreSQL; unset, the routes answer 503 (the gateway runs without DATABASE_URL). */
  database?: Database;
}

const answer = (data: unknown) => ({ success: true, message: '', data });

/** Connections of the request log's reads that any user may take, one read at a time each. */
const SHARED_CONNECTIONS = 3;
/** And the administrators' own (the console, the whole log): never taken by a user's read. */
const RESERVED_CONNECTIONS = 1;
/** Connections of a gateway's pool for reads of the request log (main.ts). */
export const LOG_READ_CONNECTIONS = SHARED_CONNECTIONS + RESERVED_CONNECTIONS;
/** A read waits for its turn at most as long as one may run (LOG_QUERY_TIMEOUT_MS), until the routes tell it. */
let waitMs = 5_000;

/**
 * Runs one user's read of the request log in its turn (`LogReadTurns`: one at a time per user,
 * round-robin between users, a connection of the administrators' own), and one PostgreSQL
 * cancels at its statement time-out is a 503 that says why, not an internal error.
 */
class LogReads {
  private readonly turns = new LogReadTurns({ shared: SHARED_CONNECTIONS, reserved: RESERVED_CONNECTIONS, waitingPerUser: 1, waitMs: () => waitMs });

  run<T>(reader: { id: number; role: number }, read: () => Promise<T>): Promise<T> {
    return this.turns.run({ id: reader.id, admin: reader.role >= Role.admin }, async () => {
      try {
        return await orUnavailable(read());
      } catch (error) {
        if (isStatementTimeout(error)) throw overloaded('the request log read ran past its time limit (LOG_QUERY_TIMEOUT_MS): narrow its time range or filters', 5);
        throw error;
      }
    });
  }
}

/**
 * This gateway's reads of the request log, in turns whichever route makes them: the management
 * API's and the operations console's.
 */
export const logReads = new LogReads();

/** The reads' pool's statement time-out, the longest a read may wait for its turn. */
function waitAsLongAsAReadRuns(database: Database | undefined): void {
  const timeout = Number(database?.options.statement_timeout);
  if (timeout > 0) waitMs = timeout;
}

/** Reads of the request log, or a 503 saying this gateway runs without PostgreSQL. */
export function requestLogOf(database: Database | undefined): RequestLogQuery {
  if (!database) throw notConfigured('the request log needs PostgreSQL: this gateway runs without DATABASE_URL');
  return new RequestLogQuery(database);
}

export function requestLogRoutes(app: FastifyInstance, options: RequestLogRoutesOptions): void {
  app.addHook('onRequest', accessTokenHook(options.users, () => true));
  waitAsLongAsAReadRuns(options.database);
  const query = () => requestLogOf(options.database);

  app.get('/log/', async (request) => {
    if (request.actor!.role < Role.admin) throw forbidden('insufficient privileges for this operation');
    const filters = parseOrThrow(listLogsQuery, { ...(request.query as object) });
    return answer(await logReads.run(request.actor!, () => query().page(filters)));
  });

  app.get('/log/self', async (request) => {
    const filters = parseOrThrow(listLogsQuery, { ...(request.query as object) });
    const admin = seesChannels(request, filters);
    const page = await logReads.run(request.actor!, () => query().page({ ...filters, only_user: request.actor!.id }));
    return answer(admin ? page : { ...page, items: page.items.map(withoutChannels) });
  });

  app.get('/log/stat', async (request) => {
    const filters = parseOrThrow(logStatQuery, { ...(request.query as object) });
    const admin = seesChannels(request, filters);
    const own = admin ? {} : { only_user: request.actor!.id };
    return answer(await logReads.run(request.actor!, () => query().stat({ ...filters, ...own })));
  });
}

/** Of an attempt's error, its kind and a connection error's code (`connection ECONNREFUSED`). */
const ERROR_KIND_AND_CODE = /^\w+(?: [A-Z][A-Z0-9_]+)?/;

/** One try of a request as its common user sees it: how it went, never where. */
interface UserAttempt {
  status?: number;
  /** The failure's kind, and a connection error's code (`connection ECONNREFUSED`), nothing more. */
  error?: string;
  ms: number;
}

/** A row of the request log as its common user sees it. */
type UserLogEntry = Omit<RequestLogEntry, 'channel_id' | 'upstream_model' | 'attempts'> & { attempts: UserAttempt[] };

/**
 * Channels are the administrators' (their addresses, names, upstream models): a common user's
 * rows show the model it asked for and how its request went, never where it went. Its own log
 * showed `attempts[].host` (an internal upstream's name and port), and an error's message can
 * name an address ("upstream address refused: 10.0.0.5 is private"), where its answer said only
 * "upstream_error": of each try, its status, the error's kind and code, and its time.
 */
function withoutChannels(entry: RequestLogEntry): UserLogEntry {
  const { channel_id: _channel, upstream_model: _model, attempts, ...rest } = entry;
  return {
    ...rest,
    attempts: attempts.map(({ status, error, ms }) => ({
      ...(status === undefined ? {} : { status }),
      ...(error === undefined ? {} : { error: ERROR_KIND_AND_CODE.exec(error)?.[0] ?? 'failed' }),
      ms,
    })),
  };
}

/** Whether the reader sees channels (an administrator); a common user may not filter or group its rows by channel (403). */
function seesChannels(request: FastifyRequest, filters: { channel?: number; group_by?: string }): boolean {
  if (request.actor!.role >= Role.admin) return true;
  if (filters.channel !== undefined) throw forbidden('only administrators may filter the request log by channel');
  if (filters.group_by === 'channel') throw forbidden('only administrators may group the request log by channel');
  return false;
}
