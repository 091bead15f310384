/**
 * What a batch stores counts toward its user's bytes (FILE_USER_MAX_BYTES) as it stores it: its
 * results and errors as they are written, a batch stopped once its user passes the cap (ended
 * failed, what it answered kept and downloadable), and deleting a result file gives back bytes
 * only with the rows that held them. Real processes, Redis and PostgreSQL.
 */
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { stackTest } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const CAP = 1024 * 1024;
const REPLY_CHARS = 20_000;
const WINDOW = 8;
const it = stackTest({
  database: true, workers: ['completion-worker', 'batch-worker'], channelDefaults: { timeout_ms: 30_000 },
  env: { FILE_USER_MAX_BYTES: String(CAP), BATCH_WINDOW: String(WINDOW), BATCH_USER_BATCHES: '4' },
});

let seq = 0;
const client = (stack: Stack, key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });
const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
const line = (model: string, i: number) => ({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model, prompt: `prompt ${i}`, max_tokens: 5 } });

async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `s${++seq}`, password: 'storage-password' });
  const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { userId: user.id as number, openai: client(stack, key) };
}

async function settled(openai: OpenAI, id: string, timeoutMs = 90_000): Promise<OpenAI.Batch> {
  let batch = await openai.batches.retrieve(id);
  await expect.poll(async () => (batch = await openai.batches.retrieve(id)).status, { timeout: timeoutMs, interval: 200 })
    .toMatch(/^(completed|failed|cancelled|expired)$/);
  return batch;
}

/** Counted as `kept` within the few bytes of the batch's errors (written as JSON text, read back as jsonb's). */
const near = (counted: number, results: number) => expect(Math.abs(counted - results), `${counted} counted, ${results} stored`).toBeLessThan(100);

/** What PostgreSQL really holds of the user's batch results, and what the user is counted for. */
async function stored(stack: Stack, userId: number): Promise<{ results: number; counted: number }> {
  const db = new pg.Client({ connectionString: stack.postgres!.url });
  await db.connect();
  try {
    const { rows } = await db.query<{ results: string; counted: string }>(
      `SELECT (SELECT coalesce(sum(coalesce(octet_length(l.response), 0) + coalesce(octet_length(l.error::text), 0)), 0)
                 FROM batch_lines l JOIN batches b ON b.id = l.batch_id WHERE b.user_id = $1) AS results,
              (SELECT coalesce(sum(kept_bytes - input_bytes - 1024 - coalesce(octet_length(metadata::text), 0) - coalesce(octet_length(errors::text), 0)), 0)
                 FROM batches WHERE user_id = $1) AS counted`, [userId]);
    return { results: Number(rows[0]!.results), counted: Number(rows[0]!.counted) };
  } finally {
    await db.end();
  }
}

describe("a batch's results count toward its user's bytes", () => {
  it('stops batches whose results pass the cap (one, then several at once), keeps what they answered, and counts every result row', async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai({ text: 'r'.repeat(REPLY_CHARS) });
    const model = `storage-${++seq}`;
    await channel(mock, [model]);
    const { userId, openai } = await tenant(stack);
    // A 9 KB input whose 300 answers would keep 6 MB, six times the cap.
    const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl(Array.from({ length: 300 }, (_, i) => line(model, i)))), 'in.jsonl'), purpose: 'batch' });
    const first = await settled(openai, (await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' })).id);
    expect(first.status).toBe('failed');
    expect(first.errors!.data!.map((e) => e.code)).toEqual(['storage_full']);
    expect(first.errors!.data![0]!.message).toMatch(/FILE_USER_MAX_BYTES/);
    const { completed, failed, total } = first.request_counts!;
    expect(total).toBe(300);
    expect(completed).toBeGreaterThan(20);
    expect(completed).toBeLessThan(100);
    // What it answered is downloadable; the rest ended saying why.
    const output = (await (await openai.files.content(first.output_file_id!)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(output).toHaveLength(completed);
    expect(output[0].response.body.choices[0].text).toHaveLength(REPLY_CHARS);
    const errors = (await (await openai.files.content(first.error_file_id!)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(errors).toHaveLength(failed);
    expect(errors[0].error.code).toBe('batch_storage_full');

    // Every result row is counted, and no more than a window's answers past the cap are kept.
    let kept = await stored(stack, userId);
    console.log(`[storage] one batch: ${completed} of 300 lines answered, ${kept.results} result bytes stored under a ${CAP}-byte cap`);
    near(kept.counted, kept.results);
    expect(kept.results).toBeLessThan(CAP + 2 * WINDOW * (REPLY_CHARS + 1000));
    const refused = await openai.files.create({ file: await toFile(Buffer.from(jsonl([line(model, 0)])), 'more.jsonl'), purpose: 'batch' }).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(refused.message).toMatch(/FILE_USER_MAX_BYTES/);

    // Deleting the output file deletes the results it showed, and only then gives their bytes back.
    await openai.files.delete(first.output_file_id!);
    kept = await stored(stack, userId);
    near(kept.counted, kept.results);
    expect(kept.results, "the error rows only").toBeLessThan(100_000);
    // Variant: three batches of the user's at once, the cap met while all run.
    const batches = await Promise.all([0, 1, 2].map(() => openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' })));
    const ended = await Promise.all(batches.map((b) => settled(openai, b.id)));
    expect(ended.map((b) => b.status)).toEqual(['failed', 'failed', 'failed']);
    kept = await stored(stack, userId);
    const answered = ended.reduce((sum, b) => sum + b.request_counts!.completed, 0);
    console.log(`[storage] three batches at once: ${answered} of 900 lines answered, ${kept.results} result bytes stored under a ${CAP}-byte cap`);
    near(kept.counted, kept.results);
    // The three count their results as one (one batch worker's tally): past the cap by at most
    // the lines the three had in flight when it was passed, not each its own look behind the others.
    expect(kept.results).toBeLessThan(CAP + 3 * WINDOW * (REPLY_CHARS + 1000));
  }, 240_000);
});
