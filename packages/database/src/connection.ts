import pg from 'pg';
import { GatewayError, overloaded } from '@gateway/contracts';
import { storableText } from './storable.ts';

export type Database = pg.Pool;

export interface DatabaseOptions {
  /** Most connections of this process. Default 10. */
  max?: number;
  /** The process's name, shown in pg_stat_activity. */
  name?: string;
  /** PostgreSQL cancels a statement of this pool that runs longer (statement_timeout). Default none. */
  statementTimeoutMs?: number;
  /** How long a query waits for a connection while all are taken; 0 waits as long as it takes. Default 5 s. */
  connectTimeoutMs?: number;
}

/**
 * A pool of connections to the PostgreSQL named by `url`. A connection that breaks (the server
 * restarted), idle or taken out for a transaction, is dropped from the pool, never thrown at the
 * process: the next query opens a new one, and fails with a clear error while the server is away.
 */
export function createDatabase(url: string, options: DatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.name,
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    // A query the server does not answer (it went away mid-query) fails instead of hanging.
    query_timeout: 60_000,
  });
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    storableParameters(client);
    // The pool listens for errors only on its idle connections: one taken out of it
    // (`pool.connect()`, held for a transaction) that breaks (the server restarted, the
    // connection was reset or killed) would throw its 'error' at the process. Its query in
    // progress fails on its own, and the pool drops the broken connection when it is released.
    client.on('error', () => {});
  });
  return pool;
}

/**
 * Every text parameter of every query on `client` (a pooled one: `pool.query` runs on such a
 * client too) made storable (`storableText`): PostgreSQL refuses a whole statement for one
 * U+0000 in any of its parameters, so a value from a client (a model name, a filter of the
 * log, an id in a path) must never reach it as it came. Text stored never holds U+0000, so a
 * lookup by such a value finds nothing, as it should.
 */
function storableParameters(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const [config, values] = args;
    if (Array.isArray(values)) args[1] = values.map(storableParameter);
    else if (config !== null && typeof config === 'object' && Array.isArray((config as { values?: unknown }).values)) {
      const submitted = config as { values: unknown[] };
      submitted.values = submitted.values.map(storableParameter);
    }
    return query(...args);
  };
}

const storableParameter = (value: unknown): unknown => {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? storableText(item) : item));
  return value;
};

/**
 * `work` in one transaction on a connection of the pool: committed when it resolves, rolled back
 * when it throws (and its error thrown on), the connection given back either way.
 */
export async function inTransaction<T>(db: Database, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Error codes of a PostgreSQL that is away, starting, shutting down or unreachable. */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300']);

/** Whether an error means the database cannot be reached now (rather than a bad query). */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: string }).code;
  if (code && UNAVAILABLE_CODES.has(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended/i.test(error.message);
}

/**
 * Whether PostgreSQL refused a statement for what it held (a value it cannot take: SQLSTATE
 * classes 22, data exception; 23, integrity constraint; 54, program limit, such as an index row
 * too large), or a value could not even be written out for it (a RangeError or TypeError, such
 * as a date past JavaScript's range), so writing it again would fail again. Anything else (away,
 * read-only after a failover, disk full, a time-out, a deadlock) may pass on a later try.
 */
export function isRefusedForItsValues(error: unknown): boolean {
  if (error instanceof RangeError || error instanceof TypeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(22|23|54)/.test(code);
}

/** Whether PostgreSQL cancelled the statement for running past its `statement_timeout`. */
export const isStatementTimeout = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '57014';

/** The 503 a client gets while the database is away. */
export function databaseUnavailableError(): GatewayError {
  return overloaded('the file and batch store (PostgreSQL) is unavailable; retry shortly', 5);
}

/** Runs `query`, turning the database being away into a 503 with Retry-After. */
export async function orUnavailable<T>(query: Promise<T>): Promise<T> {
  try {
    return await query;
  } catch (error) {
    throw isDatabaseUnavailable(error) ? databaseUnavailableError() : error;
  }
}
