import { beforeAll, describe, expect, it } from 'vitest';
import type { Database } from './connection.ts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { BatchRuns } from './batch-runs.ts';
import { BatchStore } from './batch-store.ts';
import { BATCH_ROW_BYTES, FileStore } from './file-store.ts';
import { unixNow } from './ids.ts';

describe('what a user\'s batches keep', () => {
  const database = useTestDatabase();
  let db: Database;
  beforeAll(() => {
    db = database.db();
  });

  const lines = async function* (n: number) {
    for (let i = 1; i <= n; i++) yield { line: i, content: `{"custom_id":"${i}"}` };
  };

  it('counts each batch\'s copy of its input against its user, the file deleted or not, while the batch keeps the lines, and drops ended batches past their retention with their lines and result files', async () => {
    const files = new FileStore(db);
    const batches = new BatchStore(db);
    const runs = new BatchRuns(db);
    const userId = 77;
    const input = await files.upload(userId, 'in.jsonl', lines(3), { bytes: 1000, purpose: 'batch' });
    const request = { input_file_id: input.id, endpoint: '/v1/completions', completion_window: '24h' as const };
    const old = await batches.create({ userId, tokenId: 1 }, request, 60_000, 10, input.bytes);
    const recent = await batches.create({ userId, tokenId: 1 }, request, 60_000, 10, input.bytes);
    for (const batch of [old, recent]) await runs.addLines(batch.id, [{ line: 1, customId: 'a', body: '{}' }]);
    // The file, and each batch's copy of its lines.
    // Each batch keeps its copy and BATCH_ROW_BYTES for its rows (no metadata here).
    expect(await files.usage(userId)).toEqual({ files: 1, bytes: 3000 + 2 * BATCH_ROW_BYTES });
    // Deleted, its lines stay in the batches: the bytes stay counted (once a batch).
    await files.remove(input.id, userId);
    expect(await files.usage(userId)).toEqual({ files: 0, bytes: 2000 + 2 * BATCH_ROW_BYTES });

    // Each line answered (8 bytes of result, counted as it is written); ended 31 and 29 days ago, each with a result file.
    for (const batch of [old, recent]) await runs.record(batch.id, [{ line: 1, statusCode: 200, requestId: 'r', response: '{"ok":1}', error: null }]);
    expect(await files.usage(userId)).toEqual({ files: 0, bytes: 2000 + 2 * BATCH_ROW_BYTES + 2 * 8 });
    const now = unixNow();
    await db.query(`UPDATE batches SET status = 'completed', completed_at = $2 WHERE id = $1`, [old.id, now - 31 * 86_400]);
    await db.query(`UPDATE batches SET status = 'cancelled', cancelled_at = $2 WHERE id = $1`, [recent.id, now - 29 * 86_400]);
    for (const batch of [old, recent]) {
      await db.query(`INSERT INTO files (id, user_id, purpose, filename, bytes, line_count, created_at, kind, batch_id) VALUES ($1, $2, 'batch_output', 'o', 1, 1, $3, 'output', $4)`,
        [`file-out-${batch.id}`, userId, now, batch.id]);
    }
    expect(await runs.dropEnded(now - 30 * 86_400)).toBe(1);
    const left = async (sql: string) => (await db.query(sql, [old.id])).rows.length;
    expect(await left('SELECT 1 FROM batches WHERE id = $1')).toBe(0);
    expect(await left('SELECT 1 FROM batch_lines WHERE batch_id = $1')).toBe(0);
    expect(await left('SELECT 1 FROM files WHERE batch_id = $1')).toBe(0);
    expect(await batches.get(recent.id, userId)).toBeDefined();
    // The batch left holds its copy, its rows and its results (its result file counts for nothing of its own).
    expect(await files.usage(userId), 'the dropped batch holds nothing').toEqual({ files: 0, bytes: 1000 + BATCH_ROW_BYTES + 8 });
    expect(await runs.dropEnded(now - 30 * 86_400)).toBe(0);
    // Its output file deleted, the results it showed go with it, and only so their bytes come back.
    expect(await files.remove(`file-out-${recent.id}`, userId)).toBe(true);
    expect((await db.query(`SELECT response FROM batch_lines WHERE batch_id = $1`, [recent.id])).rows).toEqual([{ response: null }]);
    expect(await files.usage(userId)).toEqual({ files: 0, bytes: 1000 + BATCH_ROW_BYTES });
  });
});
