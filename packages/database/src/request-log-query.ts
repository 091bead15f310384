import { usdOf, type ListLogsQuery, type LogStatQuery, type RequestLogRow } from '@gateway/contracts';
import type { Database } from './connection.ts';

type Filters = Omit<ListLogsQuery, 'p' | 'page_size'>;

/**
 * A row as read back: its times as epoch seconds (new-api's `created_at`), its attempts parsed,
 * and its cost in US dollars beside the nano-dollars it was logged in.
 */
export type RequestLogEntry = Omit<RequestLogRow, 'created_at'> & {
  created_at: number;
  /** What it cost, in USD: 0 when it was not priced. */
  cost: number;
  /** Whether a price was applied: false when its model had no price, or it was refused or never answered. */
  priced: boolean;
};

export interface RequestLogStat {
  /** The hour or day (epoch seconds) when `interval` is asked for. */
  bucket?: number;
  /** The value grouped by when `group_by` is asked for. */
  key?: string | number | null;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  quota: number;
  /** What the requests cost, in USD, and in the nano-dollars it was summed in. */
  cost: number;
  cost_nanos: number;
  /** Requests answered (status below 400) whose model had no price: counted in no cost. */
  unpriced: number;
  /** Mean, median and 99th percentile of total_ms. */
  mean_ms: number;
  p50_ms: number;
  p99_ms: number;
}

/** What one key, user or model spent over the current UTC day and month. */
export interface SpendLine {
  /** A key's or user's id, or a model's name. */
  key: string | number;
  /** A key's name (the last it was logged under). */
  name?: string;
  /** USD, and requests answered (or charged), since the current UTC day's start and the month's. */
  day: number;
  month: number;
  day_requests: number;
  month_requests: number;
  /** Requests of the month answered at no price (models with none). */
  unpriced: number;
}

export interface Spend {
  /** The current UTC day's and month's starts, epoch seconds. */
  day_start: number;
  month_start: number;
  keys: SpendLine[];
  users: SpendLine[];
  models: SpendLine[];
}

/** How one channel's upstream calls went over the last minutes, from every request's attempts. */
export interface ChannelHealth {
  channel_id: number;
  /** Calls made to it (a request that failed over counts once for each channel it tried). */
  calls: number;
  /** Calls that failed: an HTTP error status or no answer at all. */
  errors: number;
  /** Answers of 429 (rate limited) from its upstream. */
  rate_limited: number;
  /** Median and 99th percentile of a call's time. */
  p50_ms: number;
  p99_ms: number;
}

const GROUP_COLUMNS = { model: 'model', channel: 'channel_id', user: 'user_id', token: 'token_id', route: 'route', status: 'status' } as const;

/** The WHERE clause of the filters, with its parameters (never a value spliced into the SQL). */
function where(filters: Filters & { only_user?: number }): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    clauses.push(clause.replace('?', `$${params.length}`));
  };
  if (filters.start_timestamp !== undefined) add('created_at >= to_timestamp(?)', filters.start_timestamp);
  if (filters.end_timestamp !== undefined) add('created_at < to_timestamp(?)', filters.end_timestamp);
  if (filters.only_user !== undefined) add('user_id = ?', filters.only_user);
  if (filters.user_id !== undefined) add('user_id = ?', filters.user_id);
  if (filters.token_id !== undefined) add('token_id = ?', filters.token_id);
  if (filters.model_name !== undefined) add('model = ?', filters.model_name);
  if (filters.channel !== undefined) add('channel_id = ?', filters.channel);
  if (filters.status !== undefined) add('status = ?', filters.status);
  if (filters.failed !== undefined) clauses.push(filters.failed ? 'status >= 400' : 'status < 400');
  if (filters.request_id !== undefined) add('request_id = ?', filters.request_id);
  if (filters.batch_id !== undefined) add('batch_id = ?', filters.batch_id);
  if (filters.trace_id !== undefined) add('trace_id = ?', filters.trace_id);
  return { sql: clauses.length ? `WHERE ${clauses.join(' AND ')}` : '', params };
}

const ENTRY_COLUMNS = `extract(epoch from created_at)::float8 AS created_at, job_id, request_id, user_id, token_id, token_name, route, model,
  upstream_model, channel_id, attempts, status, error_code, error_message, priority, batch_id, streamed, prompt_tokens,
  completion_tokens, total_tokens, quota, queue_ms, slot_ms, first_byte_ms, upstream_ms, total_ms, prompt, reply, count, client_ip, credential,
  cache_read_tokens, cache_write_tokens, sticky, trace_id, cost_nanos::float8 AS cost_nanos`;

/** Nulls left out, as the writer left them out; the cost in USD, and whether there was one. */
function entryOf(row: Record<string, unknown>): RequestLogEntry {
  const entry = Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)) as RequestLogEntry;
  const nanos = entry.cost_nanos;
  return { ...entry, cost: nanos === undefined ? 0 : usdOf(nanos), priced: nanos !== undefined };
}

/** Reads of the request log, for the management API and the console. */
export class RequestLogQuery {
  private readonly db: Database;

  constructor(db: Database) {
    this.db = db;
  }

  /** A page of rows, newest first, and how many match. `only_user` narrows to one user's own. */
  async page(query: ListLogsQuery & { only_user?: number }): Promise<{ items: RequestLogEntry[]; total: number; page: number; page_size: number }> {
    const { sql, params } = where(query);
    const offset = (query.p - 1) * query.page_size;
    // One after the other, on one connection at a time: a read takes one of its pool's few
    // connections (two at once let one user's two reads take all three).
    const rows = await this.db.query(`SELECT ${ENTRY_COLUMNS} FROM request_log ${sql} ORDER BY created_at DESC, job_id DESC LIMIT ${query.page_size} OFFSET ${offset}`, params);
    const count = await this.db.query<{ total: string }>(`SELECT count(*) AS total FROM request_log ${sql}`, params);
    return { items: rows.rows.map(entryOf), total: Number(count.rows[0]!.total), page: query.p, page_size: query.page_size };
  }

  /** Sums over the rows the filters match, per `group_by` and per `interval` when asked. */
  async stat(query: LogStatQuery & { only_user?: number }): Promise<RequestLogStat[]> {
    const { sql, params } = where(query);
    const keys: string[] = [];
    if (query.interval) keys.push(`extract(epoch from date_trunc('${query.interval}', created_at, 'UTC'))::bigint AS bucket`);
    if (query.group_by) keys.push(`${GROUP_COLUMNS[query.group_by]} AS key`);
    const columns = keys.map((_, i) => i + 1);
    // Past the row cap, the newest buckets are the ones kept (then put back in time order).
    const groupBy = keys.length ? `GROUP BY ${columns.join(', ')} ORDER BY ${columns.map((c) => `${c} DESC`).join(', ')}` : '';
    const reorder = keys.length ? `ORDER BY ${columns.join(', ')}` : '';
    const { rows } = await this.db.query(
      `SELECT * FROM (SELECT ${keys.length ? `${keys.join(', ')}, ` : ''}coalesce(sum(count), 0)::int8 AS requests, coalesce(sum(count) FILTER (WHERE status >= 400), 0)::int8 AS errors,
         coalesce(sum(prompt_tokens), 0)::int8 AS prompt_tokens, coalesce(sum(completion_tokens), 0)::int8 AS completion_tokens,
         coalesce(sum(total_tokens), 0)::int8 AS total_tokens, coalesce(sum(quota), 0)::int8 AS quota,
         coalesce(sum(cost_nanos), 0)::text AS cost_nanos,
         coalesce(sum(count) FILTER (WHERE cost_nanos IS NULL AND status < 400), 0)::int8 AS unpriced,
         coalesce(round(avg(total_ms)), 0)::int AS mean_ms,
         coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY total_ms), 0)::int AS p50_ms,
         coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY total_ms), 0)::int AS p99_ms
       FROM request_log ${sql} ${groupBy} LIMIT 10000) AS sums ${reorder}`,
      params,
    );
    return rows.map((row) => ({
      ...row,
      ...(row.bucket !== undefined ? { bucket: Number(row.bucket) } : {}),
      requests: Number(row.requests),
      errors: Number(row.errors),
      prompt_tokens: Number(row.prompt_tokens),
      completion_tokens: Number(row.completion_tokens),
      total_tokens: Number(row.total_tokens),
      quota: Number(row.quota),
      cost: usdOf(Number(row.cost_nanos)),
      cost_nanos: Number(row.cost_nanos),
      unpriced: Number(row.unpriced),
    })) as RequestLogStat[];
  }

  /**
   * Spend per key, user and model over the current UTC day and month, the `limit` dearest of
   * each over the month: one read of the month's partitions (grouping sets), no more columns
   * than it sums.
   */
  async spend(limit = 50): Promise<Spend> {
    const { rows } = await this.db.query<Record<string, string | null>>(
      `WITH bounds AS (SELECT date_trunc('day', now(), 'UTC') AS day, date_trunc('month', now(), 'UTC') AS month),
       sums AS (
         SELECT CASE WHEN grouping(token_id) = 0 THEN 'keys' WHEN grouping(user_id) = 0 THEN 'users' ELSE 'models' END AS kind,
           coalesce(token_id::text, user_id::text, model) AS key, max(token_name) AS name,
           coalesce(sum(cost_nanos) FILTER (WHERE created_at >= (SELECT day FROM bounds)), 0)::text AS day,
           coalesce(sum(cost_nanos), 0)::text AS month,
           coalesce(sum(count) FILTER (WHERE created_at >= (SELECT day FROM bounds)), 0)::int8 AS day_requests,
           coalesce(sum(count), 0)::int8 AS month_requests,
           coalesce(sum(count) FILTER (WHERE cost_nanos IS NULL AND status < 400), 0)::int8 AS unpriced
         FROM request_log WHERE created_at >= (SELECT month FROM bounds) AND (status < 400 OR cost_nanos IS NOT NULL)
         GROUP BY GROUPING SETS ((token_id), (user_id), (model))),
       ranked AS (SELECT *, row_number() OVER (PARTITION BY kind ORDER BY month::numeric DESC, month_requests DESC) AS rank FROM sums)
       SELECT kind, key, name, day, month, day_requests, month_requests, unpriced,
         extract(epoch from (SELECT day FROM bounds))::int8::text AS day_start, extract(epoch from (SELECT month FROM bounds))::int8::text AS month_start
       FROM ranked WHERE rank <= $1 ORDER BY kind, rank`,
      [limit],
    );
    const now = new Date();
    const spend: Spend = {
      day_start: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) / 1000,
      month_start: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000,
      keys: [], users: [], models: [],
    };
    for (const row of rows) {
      spend.day_start = Number(row.day_start);
      spend.month_start = Number(row.month_start);
      const kind = row.kind as 'keys' | 'users' | 'models';
      spend[kind].push({
        key: kind === 'models' ? row.key! : Number(row.key),
        ...(kind === 'keys' && row.name ? { name: row.name } : {}),
        day: usdOf(Number(row.day)), month: usdOf(Number(row.month)),
        day_requests: Number(row.day_requests), month_requests: Number(row.month_requests), unpriced: Number(row.unpriced),
      });
    }
    return spend;
  }

  /** Each channel's calls over the last `seconds`, from the attempts of the requests that arrived in that time. */
  async channelHealth(seconds: number): Promise<ChannelHealth[]> {
    const { rows } = await this.db.query<ChannelHealth>(
      `SELECT (a->>'channel_id')::int AS channel_id, count(*)::int AS calls,
         count(*) FILTER (WHERE a->>'error' IS NOT NULL OR (a->>'status')::int >= 400)::int AS errors,
         count(*) FILTER (WHERE (a->>'status')::int = 429)::int AS rate_limited,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY (a->>'ms')::int)::int AS p50_ms,
         percentile_disc(0.99) WITHIN GROUP (ORDER BY (a->>'ms')::int)::int AS p99_ms
       FROM request_log, jsonb_array_elements(attempts) AS a
       WHERE created_at >= now() - make_interval(secs => $1)
       GROUP BY 1`,
      [seconds],
    );
    return rows;
  }
}
