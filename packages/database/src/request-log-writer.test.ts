import { beforeAll, describe, expect, it } from 'vitest';
import { INT4_MAX, type RequestLogRow } from '@gateway/contracts';
import type { TestPostgres } from '@gateway/testkit';
import { createDatabase, type Database } from './connection.ts';
import { useTestDatabase } from './test-database.ts';
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
