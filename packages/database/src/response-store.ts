/**
 * Stored responses of the Responses API, in PostgreSQL (`stored_responses`): a user's own, by
 * id, until `expires_at` (RESPONSE_RETENTION_DAYS after it was made). Expired rows are invisible
 * at once and dropped a few at a time as new ones are written, so no sweeper runs for them.
 */
import { randomBytes } from 'node:crypto';
import type { ResponsesResponse } from '@gateway/contracts';
import type pg from 'pg';
import { inTransaction, type Database } from './connection.ts';
import { unixNow } from './ids.ts';

export type StoredItem = Record<string, unknown> & { id: string; type: string };

export interface StoredResponse {
  response: ResponsesResponse;
  inputItems: StoredItem[];
  /** The key of the conversation it is a turn of, when one names it (`Conversation.key`). */
  conversation?: string;
  /** A background response created with `stream: true`: its events are recorded, to be followed. */
  streamed?: true;
}

/** PostgreSQL's own clock in milliseconds: one clock for every gateway's run leases. */
const DATABASE_NOW_MS = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** How long one statement of the store may run before PostgreSQL cancels it. */
export const STATEMENT_TIMEOUT_MS = 5_000;

/** Expired rows dropped with each write: enough that writes outpace expiry, few enough to stay cheap. */
const SWEEP_ROWS = 100;

const PREFIX: Record<string, string> = { message: 'msg', function_call: 'fc', function_call_output: 'fco', reasoning: 'rs' };

/** Input items as stored and listed: each with a type and an id (OpenAI's input_items have both). */
export function identifiedItems(items: Record<string, unknown>[]): StoredItem[] {
  return items.map((item) => {
    const type = typeof item.type === 'string' ? item.type : 'message';
    const id = typeof item.id === 'string' ? item.id : `${PREFIX[type] ?? 'item'}_${randomBytes(16).toString('hex')}`;
    return { ...item, type, id };
  });
}

export class ResponseStore {
  private readonly db: Database;
  private readonly retentionDays: number;

  constructor(db: Database, retentionDays: number) {
    this.db = db;
    this.retentionDays = retentionDays;
  }

  /** Stores the response, or its final state over a queued or running one (`streamed` is kept from the first save). */
  async save(userId: number, response: ResponsesResponse, inputItems: StoredItem[], conversation?: string, streamed = false): Promise<void> {
    const now = unixNow();
    const input = JSON.stringify(inputItems);
    const reply = JSON.stringify(response);
    await this.query(
      `WITH swept AS (DELETE FROM stored_responses WHERE id IN (SELECT id FROM stored_responses WHERE expires_at <= $2 LIMIT ${SWEEP_ROWS}))
       INSERT INTO stored_responses (id, user_id, created_at, expires_at, bytes, input_items, response, conversation_key, streamed) VALUES ($1, $3, $2, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (id) DO UPDATE SET response = EXCLUDED.response, bytes = EXCLUDED.bytes
         WHERE stored_responses.user_id = EXCLUDED.user_id AND stored_responses.response->>'status' IN ('queued', 'in_progress')`,
      [response.id, now, userId, now + this.retentionDays * 86_400, Buffer.byteLength(input) + Buffer.byteLength(reply), input, reply, conversation ?? null, streamed || null],
    );
  }

  /**
   * A background response's status, while it has not ended (`queued`, `in_progress`): an ended
   * one, a cancelled one above all, is never changed again. Whether it changed.
   */
  async setStatus(id: string, userId: number, status: 'in_progress' | 'cancelled' | 'failed', error?: { code: string; message: string }): Promise<boolean> {
    const { rowCount } = await this.query(
      `UPDATE stored_responses SET response = response || jsonb_build_object('status', $3::text, 'error', $4::jsonb)
       WHERE id = $1 AND user_id = $2 AND response->>'status' IN ('queued', 'in_progress')`,
      [id, userId, status, JSON.stringify(error ?? null)],
    );
    return (rowCount ?? 0) > 0;
  }

  /**
   * The gateway running a background response says it still runs it (`run_renewed_at`, by
   * PostgreSQL's clock, so gateways' clocks need not agree), while it has not ended.
   */
  async renewRun(id: string, userId: number): Promise<void> {
    await this.query(
      `UPDATE stored_responses SET run_renewed_at = ${DATABASE_NOW_MS}
       WHERE id = $1 AND user_id = $2 AND response->>'status' IN ('queued', 'in_progress')`,
      [id, userId],
    );
  }

  /**
   * A background response whose run stopped renewing more than `staleMs` ago (its gateway gone)
   * ends as `failed` with `error`; one no run ever renewed is left as it is. Whether it ended.
   */
  async failAbandoned(id: string, userId: number, staleMs: number, error: { code: string; message: string }): Promise<boolean> {
    const { rowCount } = await this.query(
      `UPDATE stored_responses SET response = response || jsonb_build_object('status', 'failed', 'error', $4::jsonb)
       WHERE id = $1 AND user_id = $2 AND response->>'status' IN ('queued', 'in_progress') AND run_renewed_at < ${DATABASE_NOW_MS} - $3`,
      [id, userId, staleMs, JSON.stringify(error)],
    );
    return (rowCount ?? 0) > 0;
  }

  async get(id: string, userId: number): Promise<StoredResponse | undefined> {
    const { rows } = await this.query<{ input_items: StoredItem[]; response: ResponsesResponse; conversation_key: string | null; streamed: boolean | null }>(
      'SELECT input_items, response, conversation_key, streamed FROM stored_responses WHERE id = $1 AND user_id = $2 AND expires_at > $3',
      [id, userId, unixNow()],
    );
    const row = rows[0];
    return row ? { response: row.response, inputItems: row.input_items, ...(row.conversation_key ? { conversation: row.conversation_key } : {}), ...(row.streamed ? { streamed: true as const } : {}) } : undefined;
  }

  /** Whether the user had it (and now has not). */
  async remove(id: string, userId: number): Promise<boolean> {
    const { rowCount } = await this.query('DELETE FROM stored_responses WHERE id = $1 AND user_id = $2 AND expires_at > $3', [id, userId, unixNow()]);
    return (rowCount ?? 0) > 0;
  }

  /** A streamed background response's next events, in order: a page after `seq` (the user's own response's). */
  async eventsAfter(id: string, userId: number, seq: number, limit = 500): Promise<{ seq: number; data: string }[]> {
    const { rows } = await this.query<{ seq: number; data: string }>(
      `SELECT e.seq, e.data FROM stored_response_events e JOIN stored_responses r ON r.id = e.response_id
       WHERE e.response_id = $1 AND r.user_id = $2 AND e.seq > $3 ORDER BY e.seq LIMIT $4`,
      [id, userId, seq, limit],
    );
    return rows;
  }

  /** Appends events of a streamed background response (numbered by its stream). */
  async appendEvents(id: string, events: { seq: number; data: string }[]): Promise<void> {
    if (events.length === 0) return;
    await this.query(
      `INSERT INTO stored_response_events (response_id, seq, data)
       SELECT $1, seq, data FROM unnest($2::integer[], $3::text[]) AS e(seq, data) ON CONFLICT DO NOTHING`,
      [id, events.map((event) => event.seq), events.map((event) => event.data)],
    );
  }

  /**
   * Output or input items of the user's stored responses, by their ids (`item_reference`s): those
   * found, by id, in one statement whatever the number asked for.
   */
  async items(ids: string[], userId: number): Promise<Map<string, StoredItem>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.query<{ id: string; item: StoredItem }>(
      `SELECT DISTINCT ON (item->>'id') item->>'id' AS id, item FROM stored_responses r,
         LATERAL (SELECT item FROM jsonb_array_elements(r.response->'output') item UNION ALL SELECT item FROM jsonb_array_elements(r.input_items) item) items
       WHERE r.user_id = $2 AND r.expires_at > $3 AND item->>'id' = ANY($1::text[])`,
      [ids, userId, unixNow()],
    );
    return new Map(rows.map((row) => [row.id, row.item]));
  }

  /** An output or input item of one of the user's stored responses, by its id (an `item_reference`). */
  async item(id: string, userId: number): Promise<StoredItem | undefined> {
    return (await this.items([id], userId)).get(id);
  }

  /** A stored response's status alone (not its whole row), when the user has it. */
  async status(id: string, userId: number): Promise<string | undefined> {
    const { rows } = await this.query<{ status: string }>(
      `SELECT response->>'status' AS status FROM stored_responses WHERE id = $1 AND user_id = $2 AND expires_at > $3`,
      [id, userId, unixNow()],
    );
    return rows[0]?.status;
  }

  /**
   * A page of a stored response's input items, read in PostgreSQL so a large response is not
   * sent whole to give one page: after the item `after` (from the start when it is not there),
   * in `order`; undefined when the user has no such response.
   */
  async inputItemsPage(id: string, userId: number, page: { after?: string; limit: number; order: 'asc' | 'desc' }): Promise<{ data: StoredItem[]; hasMore: boolean } | undefined> {
    const { rows } = await this.query<{ item: StoredItem | null }>(
      `WITH owned AS (SELECT input_items FROM stored_responses WHERE id = $1 AND user_id = $2 AND expires_at > $3),
         listed AS (SELECT e.item, e.n AS at FROM owned, jsonb_array_elements(owned.input_items) WITH ORDINALITY e(item, n)),
         start AS (SELECT COALESCE((SELECT at FROM listed WHERE item->>'id' = $4 LIMIT 1), CASE WHEN $5 = 'asc' THEN 0 ELSE 9223372036854775807 END) AS from_at),
         paged AS (SELECT item, at FROM listed, start WHERE CASE WHEN $5 = 'asc' THEN at > from_at ELSE at < from_at END
           ORDER BY CASE WHEN $5 = 'asc' THEN at ELSE -at END LIMIT $6)
       SELECT NULL::jsonb AS item FROM owned UNION ALL (SELECT item FROM paged ORDER BY CASE WHEN $5 = 'asc' THEN at ELSE -at END)`,
      [id, userId, unixNow(), page.after ?? null, page.order, page.limit + 1],
    );
    if (rows.length === 0) return undefined;
    const items = rows.slice(1).map((row) => row.item!);
    return { data: items.slice(0, page.limit), hasMore: items.length > page.limit };
  }

  /**
   * A query bounded by STATEMENT_TIMEOUT_MS: a read over every stored response of a user (an
   * item reference) must not hold a connection of the pool other requests share for long.
   */
  private async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    return inTransaction(this.db, async (client) => {
      await client.query(`SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
      return client.query<R>(text, values);
    });
  }
}
