import { INT4_MAX, type RequestLogRow } from '@gateway/contracts';
import type { Database } from './connection.ts';
import { isDatabaseUnavailable, isRefusedForItsValues } from './connection.ts';
import { storableJson } from './storable.ts';

export interface RequestLogWriterOptions {
  /** Rows wait at most this long before they are written. Default 500. */
  flushMs?: number;
  /** Rows one INSERT writes at most. Default 1,000. */
  batchRows?: number;
  /**
   * Rows held while PostgreSQL is away (or slower than the traffic). Past it a row is dropped,
   * counted (`onDropped`) and logged, never silently. Default 50,000 (about 50 MB at worst).
   */
  maxBuffered?: number;
  /** Days of the log kept: older days' partitions are dropped, once an hour. 0 keeps every day. Default 30. */
  retentionDays?: number;
  /** Told of rows dropped: the buffer was full, or PostgreSQL refused a row on its own (`writeOrDrop`). */
  onDropped?: (rows: number) => void;
  /** Told of rows written. */
  onWritten?: (rows: number) => void;
  log?: { warn(fields: object, message: string): void; info(fields: object, message: string): void };
}

/** The columns, in the order the INSERT's arrays give them, with each array's type. */
const COLUMNS: [keyof RequestLogRow, string][] = [
  ['created_at', 'timestamptz'], ['job_id', 'text'], ['request_id', 'text'], ['user_id', 'int4'], ['token_id', 'int4'],
  ['token_name', 'text'], ['route', 'text'], ['model', 'text'], ['upstream_model', 'text'],
  ['channel_id', 'int4'], ['attempts', 'jsonb'], ['status', 'int4'], ['error_code', 'text'],
  ['error_message', 'text'], ['priority', 'text'], ['batch_id', 'text'], ['streamed', 'bool'],
  ['prompt_tokens', 'int4'], ['completion_tokens', 'int4'], ['total_tokens', 'int4'], ['quota', 'int4'],
  ['queue_ms', 'int4'], ['slot_ms', 'int4'], ['first_byte_ms', 'int4'], ['upstream_ms', 'int4'],
  ['total_ms', 'int4'], ['prompt', 'text'], ['reply', 'text'], ['count', 'int4'], ['client_ip', 'text'], ['credential', 'text'],
  ['cache_read_tokens', 'int4'], ['cache_write_tokens', 'int4'], ['sticky', 'text'], ['trace_id', 'text'],
  ['cost_nanos', 'int8'],
];

/** A row's key: one row per request (its job). */
const KEY = ['created_at', 'job_id'];

const INSERT = `INSERT INTO request_log (${COLUMNS.map(([name]) => name).join(', ')})
  SELECT * FROM unnest(${COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})
  ON CONFLICT (${KEY.join(', ')}) DO UPDATE SET ${COLUMNS.filter(([name]) => !KEY.includes(name)).map(([name]) => `${name} = excluded.${name}`).join(', ')}
  WHERE excluded.queue_ms IS NOT NULL OR request_log.queue_ms IS NULL`;

/**
 * Every other text column is a name or an id, some indexed: cut to this many characters (at most
 * 1 KiB of UTF-8, within a btree row's 2,704 bytes). Routes refuse longer model names already;
 * one that came another way (8,000 characters) failed its INSERT, and every row written with it.
 */
const MAX_NAME_CHARS = 256;
const LONG_TEXT = new Set<keyof RequestLogRow>(['error_message', 'prompt', 'reply']);

/** A number as an int4 column takes it: whole, within its range; null for none or not a number. */
const storableInt = (value: number | undefined): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? Math.max(-INT4_MAX - 1, Math.min(INT4_MAX, Math.round(value))) : null;

/** A cost as its int8 column takes it: whole nano-dollars, never negative; null for none (not priced). */
const storableNanos = (value: number | undefined): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.round(value))) : null;

const DAY_MS = 86_400_000;
const partitionName = (day: number) => `request_log_${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
const dayOf = (epochMs: number) => Math.floor(epochMs / DAY_MS) * DAY_MS;

/** What PostgreSQL answers when two processes make the same partition at once. */
const ALREADY_MADE = new Set(['42P07', '23505']);

/**
 * The request log's writer, one per process that ends requests: rows are buffered and written
 * in batches, one multi-row INSERT (`unnest` of one array per column) per flush, off the reply
 * path. A day's partition is made by the first flush that needs it. While PostgreSQL is away the
 * rows wait, up to `maxBuffered`; live requests never wait on the log.
 */
export class RequestLogWriter {
  private readonly db: Database;
  private readonly options: Required<Omit<RequestLogWriterOptions, 'log' | 'onDropped' | 'onWritten'>> & RequestLogWriterOptions;
  private buffer: RequestLogRow[] = [];
  private readonly days = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private retention: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private away = false;
  private droppedSinceLog = 0;

  constructor(db: Database, options: RequestLogWriterOptions = {}) {
    this.db = db;
    this.options = { flushMs: 500, batchRows: 1_000, maxBuffered: 50_000, retentionDays: 30, ...options };
  }

  /** Starts flushing on its timer, and the retention's hourly sweep. */
  start(): this {
    this.timer = setInterval(() => void this.flush(), this.options.flushMs);
    this.timer.unref();
    if (this.options.retentionDays > 0) {
      void this.dropExpired().catch(() => {});
      this.retention = setInterval(() => void this.dropExpired().catch(() => {}), 3_600_000);
      this.retention.unref();
    }
    return this;
  }

  /** Queues a row for the next flush; a full buffer drops it, counted. */
  record(row: RequestLogRow): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.options.onDropped?.(1);
      if (this.droppedSinceLog++ === 0) this.options.log?.warn({ buffered: this.buffer.length }, 'request log buffer full: rows dropped until PostgreSQL catches up');
      return;
    }
    this.buffer.push(row);
  }

  /** Rows waiting to be written. */
  get buffered(): number {
    return this.buffer.length;
  }

  /** Writes what is buffered (in batches of `batchRows`); a failure keeps the rows for the next try. */
  flush(): Promise<void> {
    this.flushing ??= this.writeAll().finally(() => { this.flushing = undefined; });
    return this.flushing;
  }

  private async writeAll(): Promise<void> {
    while (this.buffer.length > 0) {
      const rows = this.buffer.slice(0, this.options.batchRows);
      let written: number;
      try {
        written = await this.writeOrDrop(rows);
      } catch (error) {
        if (!this.away) {
          this.away = true;
          this.options.log?.warn({ reason: (error as Error).message, buffered: this.buffer.length, unavailable: isDatabaseUnavailable(error) }, 'request log rows not written yet; kept for the next try');
        }
        return;
      }
      this.buffer.splice(0, rows.length);
      this.options.onWritten?.(written);
      if (this.away || this.droppedSinceLog > 0) {
        this.options.log?.info({ dropped: this.droppedSinceLog }, 'request log written again');
        this.away = false;
        this.droppedSinceLog = 0;
      }
    }
  }

  /**
   * Writes `rows`; when PostgreSQL refuses them for what they hold (`isRefusedForItsValues`),
   * writes them in halves, down to single rows, and drops the rows it refuses alone, counted and
   * logged: one row it cannot take never holds back the rows beside it and after it. Any other
   * failure (away, read-only, disk full, a deadlock) keeps them all for the next try.
   */
  private async writeOrDrop(rows: RequestLogRow[]): Promise<number> {
    try {
      await this.write(rows);
      return rows.length;
    } catch (error) {
      if (!isRefusedForItsValues(error)) throw error;
      if (rows.length === 1) {
        this.options.onDropped?.(1);
        this.options.log?.warn({ requestId: rows[0]!.request_id, jobId: rows[0]!.job_id, reason: (error as Error).message }, 'request log row refused by PostgreSQL: dropped');
        return 0;
      }
      const half = Math.ceil(rows.length / 2);
      return (await this.writeOrDrop(rows.slice(0, half))) + (await this.writeOrDrop(rows.slice(half)));
    }
  }

  private async write(batch: RequestLogRow[]): Promise<void> {
    // One row per key in one INSERT (a job run twice, its rows in one batch): the last stands,
    // as it does across INSERTs, except that a worker's row (it has a queue_ms) is never replaced
    // by the gateway's (a request it saw leave as its job was taken: the worker's row says more).
    const byKey = new Map<string, RequestLogRow>();
    for (const row of batch) {
      const key = `${row.created_at}\u0000${row.job_id}`;
      const before = byKey.get(key);
      if (!before || row.queue_ms !== undefined || before.queue_ms === undefined) byKey.set(key, row);
    }
    const rows = [...byKey.values()];
    for (const day of new Set(rows.map((row) => dayOf(row.created_at)))) await this.ensurePartition(day);
    // Values as their columns take them: JSON, integers within int4 (an upstream's usage may
    // claim anything), and names cut to what an index takes; text without U+0000 is the pool's
    // (`createDatabase`).
    const columns = COLUMNS.map(([name, type]) => rows.map((row) => {
      const value = row[name];
      if (name === 'created_at') return new Date(value as number);
      if (name === 'attempts') return storableJson(value);
      if (name === 'count') return storableInt(value as number | undefined) ?? 1;
      if (type === 'int4') return storableInt(value as number | undefined);
      if (type === 'int8') return storableNanos(value as number | undefined);
      if (typeof value === 'string' && !LONG_TEXT.has(name)) return value.slice(0, MAX_NAME_CHARS);
      return value ?? null;
    }));
    await this.db.query(INSERT, columns);
  }

  private async ensurePartition(day: number): Promise<void> {
    if (this.days.has(day)) return;
    const from = new Date(day).toISOString();
    const to = new Date(day + DAY_MS).toISOString();
    try {
      await this.db.query(`CREATE TABLE IF NOT EXISTS ${partitionName(day)} PARTITION OF request_log FOR VALUES FROM ('${from}') TO ('${to}')`);
    } catch (error) {
      if (!ALREADY_MADE.has((error as { code?: string }).code ?? '')) throw error;
    }
    this.days.add(day);
  }

  /** Drops the partitions of days older than `retentionDays`; resolves with their names. */
  async dropExpired(now = Date.now()): Promise<string[]> {
    const oldest = dayOf(now) - (this.options.retentionDays - 1) * DAY_MS;
    const { rows } = await this.db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'request_log'`,
    );
    const expired = rows.map((r) => r.name).filter((name) => /^request_log_\d{8}$/.test(name) && name < partitionName(oldest));
    for (const name of expired) await this.db.query(`DROP TABLE IF EXISTS ${name}`);
    for (const day of this.days) if (day < oldest) this.days.delete(day);
    return expired;
  }

  /** Writes what is left, and stops. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.retention);
    await this.flush();
  }
}

/** The request log's settings, as the configuration names them. */
export interface RequestLogConfig {
  REQUEST_LOG: 'on' | 'off';
  LOG_RETENTION_DAYS: number;
  LOG_BUFFER_ROWS: number;
}

/**
 * The request log of a process, started; none when REQUEST_LOG is off or there is no database
 * (`open` is only called when the log is on). `metrics` wires its counters (`requestLogMetrics`).
 */
export function startRequestLog(
  open: (() => Database) | undefined,
  config: RequestLogConfig,
  log: NonNullable<RequestLogWriterOptions['log']>,
  metrics: (buffered: () => number) => Pick<RequestLogWriterOptions, 'onDropped' | 'onWritten'>,
): RequestLogWriter | undefined {
  if (!open || config.REQUEST_LOG !== 'on') return undefined;
  const writer: RequestLogWriter = new RequestLogWriter(open(), {
    retentionDays: config.LOG_RETENTION_DAYS,
    maxBuffered: config.LOG_BUFFER_ROWS,
    log,
    ...metrics(() => writer.buffered),
  });
  return writer.start();
}
