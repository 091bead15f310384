import { beforeAll, describe, expect, it } from 'vitest';
import { INT4_MAX, type RequestLogRow } from '@gateway/contracts';
import type { TestPostgres } from '@gateway/testkit';
import { createDatabase, type Database } from './connection.ts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { RequestLogQuery } from './request-log-query.ts';
import { RequestLogWriter } from './request-log-writer.ts';

const DAY = 86_400_000;

function row(overrides: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    created_at: Date.now(),
    job_id: crypto.randomUUID(),
    request_id: crypto.randomUUID(),
    user_id: 1,
    token_id: 1,
    token_name: 'k',
    route: '/v1/completions',
    model: 'm',
    attempts: [],
    status: 200,
    priority: 'interactive',
    streamed: false,
    prompt_tokens: 3,
    completion_tokens: 4,
    total_tokens: 7,
    quota: 7,
    total_ms: 12,
    ...overrides,
  };
}

describe('the request log', () => {
  const database = useTestDatabase();
  let postgres: TestPostgres;
  let db: Database;
  beforeAll(() => {
    postgres = database.server();
    db = database.db();
  });

  it('writes rows in day partitions it makes, one row per request (a re-run job\'s last row stands), and reads them back', async () => {
    const writer = new RequestLogWriter(db);
    const [id, job] = [crypto.randomUUID(), crypto.randomUUID()];
    const at = Date.UTC(2026, 10, 20, 23, 59, 59);
    writer.record(row({ job_id: job, request_id: id, created_at: at, status: 502, error_code: 'upstream_error', attempts: [{ channel_id: 4, upstream_model: 'x', error: 'connection ECONNREFUSED', host: '127.0.0.1:9', ms: 3 }] }));
    writer.record(row({ job_id: job, request_id: id, created_at: at, status: 200, channel_id: 5, attempts: [{ channel_id: 5, upstream_model: 'x', ms: 20 }] }));
    writer.record(row({ created_at: at + 2_000, model: 'other' }));
    await writer.close();
    const { rows } = await db.query<{ name: string }>(`SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid ORDER BY 1`);
    expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(['request_log_20261120', 'request_log_20261121']));
    const query = new RequestLogQuery(db);
    const found = await query.page({ p: 1, page_size: 10, request_id: id });
    expect(found.total).toBe(1);
    expect(found.items[0]).toMatchObject({ request_id: id, status: 200, channel_id: 5, attempts: [{ channel_id: 5, ms: 20 }], created_at: at / 1000 });
    const byModel = await query.stat({ start_timestamp: at / 1000 - 1, end_timestamp: at / 1000 + 10, group_by: 'model' });
    expect(byModel).toEqual([
      expect.objectContaining({ key: 'm', requests: 1, errors: 0, total_tokens: 7 }),
      expect.objectContaining({ key: 'other', requests: 1, total_tokens: 7 }),
    ]);
  });

  it('drops the days past its retention, and keeps the rest', async () => {
    const writer = new RequestLogWriter(db, { retentionDays: 2 });
    const today = Math.floor(Date.now() / DAY) * DAY;
    for (const daysAgo of [0, 1, 2, 5]) writer.record(row({ created_at: today - daysAgo * DAY + 1000 }));
    await writer.flush();
    const dropped = await writer.dropExpired();
    const day = (daysAgo: number) => `request_log_${new Date(today - daysAgo * DAY).toISOString().slice(0, 10).replaceAll('-', '')}`;
    expect(dropped).toEqual(expect.arrayContaining([day(2), day(5)]));
    expect(dropped).not.toContain(day(1));
    const left = await db.query(`SELECT count(*)::int AS n FROM request_log WHERE created_at >= to_timestamp($1)`, [(today - DAY) / 1000]);
    expect(left.rows[0].n).toBe(2);
    await writer.close();
  });

  it("keeps each request's cost in nano-dollars, answers it in USD with whether it was priced, and sums it by key, user and model over the day and month", async () => {
    const writer = new RequestLogWriter(db);
    const model = `priced-${crypto.randomUUID()}`;
    const free = `free-${crypto.randomUUID()}`;
    const batchId = `batch_${crypto.randomUUID()}`;
    const now = Date.now();
    const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
    const dayStart = Math.floor(now / DAY) * DAY;
    const rows = [
      row({ batch_id: batchId, token_id: 9101, token_name: 'alpha', user_id: 9201, model, cost_nanos: 1_500, created_at: now }),
      row({ batch_id: batchId, token_id: 9101, token_name: 'alpha', user_id: 9201, model, cost_nanos: 2_500, created_at: now }),
      row({ batch_id: batchId, token_id: 9102, token_name: 'beta', user_id: 9201, model: free, created_at: now }),
      // Refused: no cost and no price, and not counted as an unpriced answer.
      row({ batch_id: batchId, token_id: 9102, user_id: 9201, model, status: 429, total_tokens: 0, created_at: now }),
    ];
    // Earlier this month (when the month has had a day before today): in the month's sum, not the day's.
    if (dayStart > monthStart) rows.push(row({ batch_id: batchId, token_id: 9101, token_name: 'alpha', user_id: 9201, model, cost_nanos: 1_000_000_000, created_at: dayStart - 1000 }));
    for (const r of rows) writer.record(r);
    await writer.close();
    const query = new RequestLogQuery(db);
    const items = (await query.page({ p: 1, page_size: 10, batch_id: batchId })).items;
    expect(items.filter((i) => i.model === model && i.status === 200).map((i) => [i.cost, i.priced, i.cost_nanos]).sort()).toEqual(
      [[0.0000015, true, 1_500], [0.0000025, true, 2_500], ...(dayStart > monthStart ? [[1, true, 1_000_000_000]] : [])].sort());
    expect(items.find((i) => i.model === free)).toMatchObject({ cost: 0, priced: false });
    expect(items.find((i) => i.status === 429)).toMatchObject({ cost: 0, priced: false });

    const earlier = dayStart > monthStart ? 1 : 0;
    const byToken = await query.stat({ batch_id: batchId, start_timestamp: dayStart / 1000, group_by: 'token' });
    expect(byToken).toEqual([
      expect.objectContaining({ key: 9101, requests: 2, cost: 0.000004, cost_nanos: 4_000, unpriced: 0 }),
      expect.objectContaining({ key: 9102, requests: 2, cost: 0, unpriced: 1 }),
    ]);

    const spend = await query.spend();
    expect(spend.day_start).toBe(dayStart / 1000);
    expect(spend.month_start).toBe(monthStart / 1000);
    expect(spend.keys.find((k) => k.key === 9101)).toEqual({ key: 9101, name: 'alpha', day: 0.000004, month: 0.000004 + earlier, day_requests: 2, month_requests: 2 + earlier, unpriced: 0 });
    expect(spend.keys.find((k) => k.key === 9102)).toMatchObject({ day: 0, month_requests: 1, unpriced: 1 });
    expect(spend.users.find((u) => u.key === 9201)).toMatchObject({ day: 0.000004, month: 0.000004 + earlier, day_requests: 3, unpriced: 1 });
    expect(spend.models.find((m) => m.key === model)).toMatchObject({ day: 0.000004, month_requests: 2 + earlier });
    expect(spend.models.find((m) => m.key === free)).toMatchObject({ day: 0, unpriced: 1 });
  });

  it('stores what PostgreSQL refuses as it comes (U+0000, lone surrogates, usage past int4), and drops alone a row it still refuses', async () => {
    const dropped: string[] = [];
    const writer = new RequestLogWriter(db, { log: { info: () => {}, warn: (f: any) => dropped.push(f.requestId) } });
    const batchId = `batch_${crypto.randomUUID()}`;
    const nul = row({ batch_id: batchId, model: 'a\u0000b', upstream_model: 'u'.repeat(8000), error_message: 'the model "a\u0000b" does not exist', prompt: 'x\ud800y',
      attempts: [{ channel_id: 1, upstream_model: 'a\u0000b', error: 'upstream said \u0000', ms: 1, ...({ 'k\u0000': 2 } as object) }], total_tokens: 3e10, prompt_tokens: 1.6 });
    // A value no sanitising foresees (a time past JavaScript's dates), beside good rows.
    const poison = row({ batch_id: batchId, created_at: 8.64e15 + 1 });
    const beside = Array.from({ length: 40 }, () => row({ batch_id: batchId }));
    for (const r of [...beside.slice(0, 20), nul, poison, ...beside.slice(20)]) writer.record(r);
    await writer.close();
    const query = new RequestLogQuery(db);
    expect((await query.page({ p: 1, page_size: 1, batch_id: batchId })).total, 'every row but the one refused alone').toBe(41);
    expect(dropped).toEqual([poison.request_id]);
    const stored = (await query.page({ p: 1, page_size: 1, request_id: nul.request_id })).items[0] as any;
    expect(stored).toMatchObject({ model: 'a\ufffdb', error_message: 'the model "a\ufffdb" does not exist', total_tokens: INT4_MAX, prompt_tokens: 2 });
    expect(stored.upstream_model, 'a name cut to what an index takes').toBe('u'.repeat(256));
    expect(stored.attempts[0]).toMatchObject({ upstream_model: 'a\ufffdb', error: 'upstream said \ufffd', 'k\ufffd': 2 });
  });

  it('keeps its rows while PostgreSQL takes no writes (read-only, as after a failover), and writes them after', async () => {
    const setReadOnly = (on: boolean) => db.query(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = ${on ? 'on' : 'off'}', current_database()); END $$`);
    await setReadOnly(true);
    const readOnly = createDatabase(postgres.url);
    let dropped = 0;
    const writer = new RequestLogWriter(readOnly, { onDropped: (n) => { dropped += n; } });
    const batchId = `batch_${crypto.randomUUID()}`;
    try {
      for (let i = 0; i < 10; i++) writer.record(row({ batch_id: batchId, created_at: Date.UTC(2026, 10, 10) }));
      await writer.flush();
      expect(writer.buffered, 'kept, not dropped: a later try may pass').toBe(10);
      expect(dropped).toBe(0);
    } finally {
      await setReadOnly(false);
      // Its connections were opened read-only: they go, and the next ones may write.
      await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    }
    await expect.poll(async () => { await writer.flush(); return writer.buffered; }, { timeout: 20_000, interval: 250 }).toBe(0);
    expect((await new RequestLogQuery(db).page({ p: 1, page_size: 1, batch_id: batchId })).total).toBe(10);
    await writer.close();
    await readOnly.end();
  });

  it('keeps rows while PostgreSQL is away and writes them when it is back; past its buffer it drops and counts', async () => {
    let dropped = 0;
    const writer = new RequestLogWriter(db, { maxBuffered: 100, onDropped: (n) => { dropped += n; } });
    const batchId = `batch_${crypto.randomUUID()}`;
    await postgres.stop({ hard: true });
    for (let i = 0; i < 120; i++) writer.record(row({ batch_id: batchId }));
    await writer.flush();
    expect(writer.buffered).toBe(100);
    expect(dropped).toBe(20);
    await postgres.restart();
    await expect.poll(async () => { await writer.flush(); return writer.buffered; }, { timeout: 20_000, interval: 500 }).toBe(0);
    const { total } = await new RequestLogQuery(db).page({ p: 1, page_size: 1, batch_id: batchId });
    expect(total).toBe(100);
    await writer.close();
  }, 60_000);
});
