import { beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogRow } from '@gateway/contracts';
import type { Database } from './connection.ts';
import { BatchStore } from './batch-store.ts';
import { FileStore } from './file-store.ts';
import { RequestLogWriter } from './request-log-writer.ts';
import { useTestDatabase } from '@gateway/testkit/test-database';
import { highestUserIdOnRecord } from './user-records.ts';

describe('the highest user id on record', () => {
  const database = useTestDatabase();
  let db: Database;
  beforeAll(() => {
    db = database.db();
  });

  it('is 0 on an empty database, then the highest owner of a file, a batch or a row of the request log', async () => {
    expect(await highestUserIdOnRecord(db)).toBe(0);
    const files = new FileStore(db);
    const lines = async function* () {
      yield { line: 1, content: '{"custom_id":"1"}' };
    };
    const input = await files.upload(5, 'in.jsonl', lines(), { bytes: 17, purpose: 'batch' });
    expect(await highestUserIdOnRecord(db)).toBe(5);

    await new BatchStore(db).create({ userId: 9, tokenId: 1 }, { input_file_id: input.id, endpoint: '/v1/completions', completion_window: '24h' }, 60_000, 1, input.bytes);
    expect(await highestUserIdOnRecord(db)).toBe(9);

    // A user with neither files nor batches, only requests logged.
    const writer = new RequestLogWriter(db);
    writer.record({
      created_at: Date.now(), job_id: 'j', request_id: 'r', user_id: 12, token_id: 3, token_name: 'k', route: '/v1/completions', model: 'm',
      attempts: [], status: 200, priority: 'interactive', streamed: false, prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, quota: 2, total_ms: 5,
    } satisfies RequestLogRow);
    await writer.close();
    expect(await highestUserIdOnRecord(db)).toBe(12);
  });
});
