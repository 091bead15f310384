import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INT4_MAX } from '@gateway/contracts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import type { Database } from './connection.ts';
import { BatchRuns } from './batch-runs.ts';
import { BatchStore } from './batch-store.ts';
import { FileStore } from './file-store.ts';
import { NEXT_LINES } from './file-lines.ts';
import { PAGE_BYTES, PART_BYTES } from './page-size.ts';
import { nextResults } from './result-files.ts';

/**
 * A large upload or batch is read a page at a time (validation, downloads, result files) right
 * after it was written, before autovacuum has analysed its table: the planner then knows nothing
 * of it. Each page must still cost a page's rows, not the whole file's for each of its lines.
 */
describe('a page of a large upload or result file, read before the statistics know it', () => {
  const database = useTestDatabase();
  let db: Database;
  const LINES = 20_000;
  const lines = async function* (n: number) {
    for (let i = 1; i <= n; i++) yield { line: i, content: JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/completions', body: { model: 'm', prompt: 'Say this is a test' } }) };
  };
  /** Buffers a query touched, and the rows it returned. */
  const cost = async (sql: string, params: unknown[]) => {
    const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: { 'Actual Rows': number; 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, params);
    const plan = rows[0]!['QUERY PLAN'][0].Plan;
    return { rows: plan['Actual Rows'], buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] };
  };

  /** A batch of LINES lines of `userId`'s, written after batch_lines was analysed with one small batch in it. */
  const aLargeBatchAfterASmallOne = async (userId: number) => {
    const batches = new BatchStore(db);
    const runs = new BatchRuns(db);
    const input = await new FileStore(db).upload(userId, 'in.jsonl', lines(1), { bytes: 100, purpose: 'batch' });
    const request = { input_file_id: input.id, endpoint: '/v1/completions', completion_window: '24h' as const };
    const small = await batches.create({ userId, tokenId: 1 }, request, 60_000);
    await runs.addLines(small.id, [{ line: 1, customId: 'a', body: '{}' }]);
    await db.query('ANALYZE batch_lines');
    const large = await batches.create({ userId, tokenId: 1 }, request, 60_000);
    const numbers = Array.from({ length: LINES }, (_, i) => i + 1);
    await runs.addLines(large.id, numbers.map((line) => ({ line, customId: `line-${line}`, body: '{}' })));
    return { runs, large, numbers };
  };

  beforeAll(async () => {
    db = database.db();
    // Statistics as a busy server has them: analysed while the tables were small, not since.
    for (const table of ['file_lines', 'batch_lines']) await db.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  });
  afterAll(async () => {
    for (const table of ['file_lines', 'batch_lines']) await db.query(`ALTER TABLE ${table} RESET (autovacuum_enabled)`);
  });

  it('reads a page of an upload\'s lines from the page\'s rows alone', async () => {
    const files = new FileStore(db);
    await files.upload(1, 'small.jsonl', lines(10), { bytes: 1000, purpose: 'batch' });
    await db.query('ANALYZE file_lines');
    const large = await files.upload(1, 'large.jsonl', lines(LINES), { bytes: 3_000_000, purpose: 'batch' });

    const page = await cost(NEXT_LINES, [large.id, LINES / 2, 1000, PAGE_BYTES, INT4_MAX]);
    expect(page.rows).toBeGreaterThan(100);
    // A page is some 20 blocks of the table and its index; joined back to the rows by the file
    // alone, it was 176,000 (every line of the file for each line of the page).
    expect(page.buffers).toBeLessThan(200);
  });

  it('reads a page of a batch\'s results from the page\'s rows alone', async () => {
    const { runs, large, numbers } = await aLargeBatchAfterASmallOne(2);
    await runs.record(large.id, numbers.map((line) => ({ line, statusCode: 200, requestId: `r-${line}`, response: '{"choices":[{"text":"This is a test"}]}', error: null })));

    const page = await cost(nextResults('output'), [large.id, LINES / 2, 1000, PAGE_BYTES, PART_BYTES]);
    expect(page.rows).toBeGreaterThan(100);
    // Each result row was rewritten when its line ended, so its versions lie apart: a couple of
    // blocks for each of the 1,000 rows looked at. Joined back by the batch alone: 19,000,000.
    expect(page.buffers).toBeLessThan(5000);
  });

  it('hands out a large batch\'s next lines, and records their results, from those lines\' rows alone', async () => {
    const { runs, large, numbers } = await aLargeBatchAfterASmallOne(3);
    expect((await runs.claim('runner-1', 10, 60_000)).map((b) => b.id)).toContain(large.id);
    await runs.nextLines(large.id, LINES / 2, 'runner-1');

    // The same statements, explained: a Database that runs each under EXPLAIN ANALYZE.
    const plans: { sql: string; buffers: number }[] = [];
    const explaining = {
      query: async (sql: string, params: unknown[]) => {
        const { rows, buffers } = await cost(sql, params);
        plans.push({ sql, buffers });
        return { rows: [], rowCount: rows };
      },
    } as unknown as Database;
    const explained = new BatchRuns(explaining);
    await explained.nextLines(large.id, 32, 'runner-1', LINES / 2);
    await explained.record(large.id, numbers.slice(0, 32).map((line) => ({ line, statusCode: 200, requestId: `r-${line}`, response: '{}', error: null })));
    expect(plans).toHaveLength(2);
    for (const plan of plans) expect(plan.buffers, plan.sql).toBeLessThan(1000);
  });
});
