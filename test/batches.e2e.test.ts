/**
 * The OpenAI Batch API run on the gateway's own queues (issue 19): a file uploaded, a batch
 * created, its lines run as batch-priority jobs through the same workers, routing and limits as
 * live requests, and its results read back as OpenAI's output and error files, all through the
 * official openai SDK against real processes, Redis and PostgreSQL.
 */
import { request } from 'node:http';
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { stackTest, type MakeChannel, type Upstreams } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

// A batch worker runs 3 batches at once, at most 2 of one user (the defaults are 32 and 4); a
// user keeps at most 5 files of 1 MiB in all, and 5 batches not yet ended (1,000, 1 GiB, 100).
const it = stackTest({
  database: true, workers: ['completion-worker', 'batch-worker'], channelDefaults: { timeout_ms: 30_000 },
  env: { BATCH_WORKER_BATCHES: '3', BATCH_USER_BATCHES: '2', FILE_USER_MAX_FILES: '5', FILE_USER_MAX_BYTES: String(1024 * 1024), BATCH_USER_OPEN: '5' },
});

let seq = 0;
const client = (stack: Stack, key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });

const jsonl = (lines: unknown[]) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
const line = (model: string, i: number, extra: Record<string, unknown> = {}) =>
  ({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model, prompt: `prompt ${i}`, max_tokens: 5, ...extra } });

async function submit(openai: OpenAI, lines: unknown[]) {
  const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'batch.jsonl'), purpose: 'batch' });
  return openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h', metadata: { run: String(++seq) } });
}

async function settled(openai: OpenAI, id: string, timeoutMs = 60_000): Promise<OpenAI.Batch> {
  const ends = ['completed', 'failed', 'cancelled', 'expired'];
  let batch = await openai.batches.retrieve(id);
  const deadline = Date.now() + timeoutMs;
  while (!ends.includes(batch.status)) {
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${batch.status} after ${timeoutMs} ms: ${JSON.stringify(batch.request_counts)}`);
    await new Promise((r) => setTimeout(r, 200)); // the poll's pace
    batch = await openai.batches.retrieve(id);
  }
  return batch;
}

async function fileLines(openai: OpenAI, id: string | null | undefined): Promise<any[]> {
  if (!id) return [];
  const text = await (await openai.files.content(id)).text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** A mock OpenAI upstream (with `behaviour`) and a channel of it serving a model of its own. */
async function servedModel({ upstream, channel }: { upstream: Upstreams; channel: MakeChannel }, behaviour?: Parameters<Upstreams['openai']>[0], fields?: Record<string, unknown>) {
  const mock = await upstream.openai(behaviour);
  const model = `batch-${++seq}`;
  await channel(mock, [model], fields);
  return { mock, model };
}

async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `b${++seq}`, password: 'batch-password' });
  const { id, key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { user, key, tokenId: id as number };
}

describe('the Batch API', () => {
  it('runs a 1,000-line batch to completion, its output in input order, each line charged once', async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel }, { text: (prompt) => `re: ${prompt}` });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const started = Date.now();
    const created = await submit(openai, Array.from({ length: 1000 }, (_, i) => line(model, i)));
    expect(created.status).toBe('validating');
    expect(created.metadata).toEqual({ run: String(seq) });
    const batch = await settled(openai, created.id, 120_000);
    console.log(`[batch] 1,000 lines completed in ${Date.now() - started} ms`);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 1000, completed: 1000, failed: 0 });
    for (const at of ['in_progress_at', 'finalizing_at', 'completed_at'] as const) expect(batch[at]).toBeGreaterThanOrEqual(batch.created_at);
    expect(batch.error_file_id).toBeNull();
    const output = await fileLines(openai, batch.output_file_id);
    expect(output.map((l) => l.custom_id)).toEqual(Array.from({ length: 1000 }, (_, i) => `req-${i}`));
    expect(output[7].response.status_code).toBe(200);
    expect(output[7].response.body.choices[0].text).toBe('re: prompt 7');
    expect(output[7].error).toBeNull();
    expect(new Set(output.map((l) => l.id)).size).toBe(1000);
    // Each line reached the upstream once, and the key was charged once per line.
    expect(mock.requests.length).toBe(1000);
    const usage = output.reduce((sum, l) => sum + l.response.body.usage.total_tokens, 0);
    const key = await stack.adminData('GET', `/api/token/${owner.tokenId}`);
    expect(key.used_quota).toBe(usage);
    // The output file is a file of its own, listed and described like an upload.
    const described = await openai.files.retrieve(batch.output_file_id!);
    expect(described.purpose).toBe('batch_output');
  });

  it('fails a batch whose lines are bad, naming each bad line by its number', async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const created = await submit(openai, [
      line(model, 0),
      { custom_id: 'x', method: 'POST', url: '/v1/chat/nothing', body: { model } },
      line(model, 0),
      { custom_id: 'y', method: 'POST', url: '/v1/completions', body: { model, prompt: 'p', max_tokens: -3 } },
      line(model, 4),
      // Nested 6,000 deep (JSON.stringify of it overflowed the stack, and the batch was taken
      // again every 0.5 s for good), and a custom_id with a lone surrogate (two such came back as one).
      `{"custom_id":"deep","method":"POST","url":"/v1/completions","body":{"model":"${model}","prompt":"p","extra":${'['.repeat(6000)}${']'.repeat(6000)}}}`,
      '{"custom_id":"a\\ud800","method":"POST","url":"/v1/completions","body":{"model":"m","prompt":"p"}}',
    ]);
    const batch = await settled(openai, created.id);
    expect(batch.status).toBe('failed');
    expect(batch.failed_at).toBeGreaterThan(0);
    const errors = batch.errors!.data!;
    expect(errors.map((e) => e.line)).toEqual([2, 3, 4, 6, 7]);
    expect(errors[3]!.message).toMatch(/nested too deeply/);
    expect(errors[4]!.param).toBe('custom_id');
    expect(errors[0]!.code).toBe('mismatched_endpoint');
    expect(errors[1]!.code).toBe('duplicate_custom_id');
    expect(errors[2]!.param).toBe('body.max_tokens');
    expect(mock.requests.length).toBe(0);
  });

  it('takes text PostgreSQL cannot store: a model named with U+0000 fails its own line, a custom_id with it is named, metadata with it is refused', async ({ stack, upstream, channel }) => {
    // U+0000 and a lone surrogate (a 100-character cut through an emoji, quoted in an error)
    // are refused by PostgreSQL's text and jsonb: one such result or error held back every
    // other result of its batch, and one such request log row every later row, for good.
    const { mock, model } = await servedModel({ upstream, channel }, { text: 'fine' });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const ran = await settled(openai, (await submit(openai, [
      line(model, 0, { prompt: 'a\u0000b' }),
      line(`${model}\u0000`, 1),
      line(model, 2),
    ])).id);
    expect(ran.status).toBe('completed');
    expect(ran.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect((await fileLines(openai, ran.output_file_id)).map((l) => l.custom_id)).toEqual(['req-0', 'req-2']);
    const [failed] = await fileLines(openai, ran.error_file_id);
    expect(failed).toMatchObject({ custom_id: 'req-1', response: { status_code: 404 }, error: { code: 'model_not_found' } });
    expect(failed.response.body.error.message, 'the answer as it was').toContain(`${model}\u0000`);
    expect(failed.error.message, 'its stored error: U+0000 replaced').toContain(`${model}\ufffd`);
    // Every line's request log row is written, and the rows after them.
    await expect.poll(async () => (await stack.adminData('GET', `/api/log/?batch_id=${ran.id}`)).total, { timeout: 15_000 }).toBe(3);

    const refused = await settled(openai, (await submit(openai, [
      { custom_id: 'a\u0000', method: 'POST', url: '/v1/completions', body: { model, prompt: 'p' } },
      { custom_id: 'b', method: 'POST', url: `/v1/${'x'.repeat(95)}\u{1F600}`, body: { model, prompt: 'p' } },
      line(model, 3),
    ])).id);
    expect(refused.status).toBe('failed');
    expect(refused.errors!.data!.map((e) => [e.line, e.param])).toEqual([[1, 'custom_id'], [2, 'url']]);

    const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl([line(model, 0)])), 'in\u0000.jsonl'), purpose: 'batch' });
    const metadata = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h', metadata: { k: 'v\u0000' } }).catch((e) => e);
    expect(metadata.status).toBe(400);
    expect(metadata.message).toMatch(/U\+0000/);
    // Looked up by such a value: what was stored for it is found (the log's row of line 2, under
    // its stored name), an id nobody has is not, and nothing fails.
    expect((await openai.batches.retrieve('batch_\u0000').catch((e) => e)).status).toBe(404);
    expect((await openai.files.retrieve('file-\u0000').catch((e) => e)).status).toBe(404);
    expect((await openai.batches.list({ after: 'batch_\u0000' })).data).toEqual([]);
    expect(await stack.adminData('GET', `/api/log/?model_name=${encodeURIComponent(`${model}\u0000`)}`)).toMatchObject({ total: 1, items: [{ batch_id: ran.id }] });
  });

  it('fails a batch that stops with an error every time it is taken, after a few tries with a back-off', async ({ stack, upstream, channel }) => {
    // An error no line check foresees, made by PostgreSQL itself: its lines cannot be written.
    const db = new pg.Client({ connectionString: stack.postgres!.url });
    await db.connect();
    await db.query(`CREATE OR REPLACE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.custom_id = 'poison' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$`);
    await db.query(`CREATE TRIGGER refuse_poison BEFORE INSERT ON batch_lines FOR EACH ROW EXECUTE FUNCTION refuse_poison()`);
    try {
      const { mock, model } = await servedModel({ upstream, channel });
      const openai = client(stack, (await tenant(stack)).key);
      const started = Date.now();
      const batch = await settled(openai, (await submit(openai, [{ ...line(model, 0), custom_id: 'poison' }])).id, 20_000);
      console.log(`[batch] a batch that stops with an error every time: failed after ${Date.now() - started} ms`);
      expect(batch.status).toBe('failed');
      expect(batch.errors!.data!.map((e) => e.code)).toEqual(['batch_error']);
      expect(batch.errors!.data![0]!.message).toMatch(/4 times in a row/);
    } finally {
      await db.query('DROP TRIGGER IF EXISTS refuse_poison ON batch_lines');
      await db.end();
    }
  });

  it('cancels mid-way: feeding stops at once, the lines in flight finish, the rest end as cancelled', async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 100 }, { max_concurrency: 4 });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const created = await submit(openai, Array.from({ length: 300 }, (_, i) => line(model, i)));
    await expect.poll(async () => (await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0, { timeout: 30_000 }).toBeGreaterThan(20);
    const cancelling = await openai.batches.cancel(created.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const batch = await settled(openai, created.id);
    expect(batch.status).toBe('cancelled');
    expect(batch.cancelled_at).toBeGreaterThan(0);
    const { completed, failed, total } = batch.request_counts!;
    expect(total).toBe(300);
    expect(completed + failed).toBe(300);
    expect(completed).toBeLessThan(200);
    const calls = mock.requests.length;
    await new Promise((r) => setTimeout(r, 500)); // a window on purpose: no call comes after the end
    expect(mock.requests.length).toBe(calls);
    expect(calls).toBe(completed);
    const errors = await fileLines(openai, batch.error_file_id);
    expect(errors.length).toBe(failed);
    expect(errors[0].error.code).toBe('batch_cancelled');
    expect((await fileLines(openai, batch.output_file_id)).length).toBe(completed);
  });

  it("stops running a model for a batch's lines once an administrator takes it from the user, as it stops the user's live requests", async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 100 });
    const owner = await tenant(stack);
    // Two lines in flight at a time (the key's cap), so most lines are still to be admitted
    // when the models change; those already admitted run, as a live request already let in does.
    const { key } = await stack.adminData('POST', '/api/token/', { name: 'two', user_id: owner.user.id, unlimited_quota: true, max_in_flight: 2 });
    const openai = client(stack, key);
    const created = await submit(openai, Array.from({ length: 100 }, (_, i) => line(model, i)));
    await expect.poll(async () => (await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0, { timeout: 30_000 }).toBeGreaterThan(5);
    await stack.adminData('PUT', '/api/user/', { id: owner.user.id, models: ['another-model'] });
    const callsAtChange = mock.requests.length;
    const batch = await settled(openai, created.id);
    expect(batch.status).toBe('completed');
    const { completed, failed, total } = batch.request_counts!;
    expect(total).toBe(100);
    // Only lines admitted before the change, or within the second the batch worker keeps a key's
    // limits, still ran: about 20 lines a second here.
    expect(mock.requests.length - callsAtChange).toBeLessThan(40);
    expect(completed).toBe(mock.requests.length);
    const errors = await fileLines(openai, batch.error_file_id);
    expect(errors.length).toBe(failed);
    expect(errors.length).toBeGreaterThan(50);
    expect(errors[0]).toMatchObject({ response: { status_code: 403 }, error: { message: expect.stringContaining(model) } });
  });

  it("stops admitting a batch's lines once its key is disabled: only those already in flight run", async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const created = await submit(openai, Array.from({ length: 1000 }, (_, i) => line(model, i)));
    await expect.poll(async () => (await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0, { timeout: 30_000, interval: 20 }).toBeGreaterThan(20);
    await stack.adminData('PUT', '/api/token/', { id: owner.tokenId, status: 2 });
    const callsAtChange = mock.requests.length;
    // Read through root: the key itself is refused now.
    const deadline = Date.now() + 60_000;
    let batch = await stack.adminData('GET', `/api/batch/${created.id}`);
    while (!['completed', 'failed', 'cancelled', 'expired'].includes(batch.status) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200)); // the poll's pace
      batch = await stack.adminData('GET', `/api/batch/${created.id}`);
    }
    // The lines in flight (at most the window, 128) end; no new one reaches the upstream, and
    // every line not run fails (the key's refusal).
    expect(mock.requests.length - callsAtChange).toBeLessThan(160);
    expect(batch.request_counts.completed + batch.request_counts.failed).toBe(1000);
    expect(batch.request_counts.completed, JSON.stringify({ callsAtChange, counts: batch.request_counts })).toBeLessThan(callsAtChange + 160);
    expect(batch.request_counts.failed).toBeGreaterThan(500);
  });

  it("stops admitting a batch's lines once its key's expired_time passes, with nothing changed at that moment", async ({ stack, upstream, channel }) => {
    // About 80 lines a second (4 slots of 50 ms calls): the batch is far from its end when the key expires.
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 50 }, { max_concurrency: 4 });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const expiresAt = Math.ceil(Date.now() / 1000) + 4;
    await stack.adminData('PUT', '/api/token/', { id: owner.tokenId, expired_time: expiresAt });
    const created = await submit(openai, Array.from({ length: 1000 }, (_, i) => line(model, i)));
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt * 1000 - Date.now()))); // to the key's expiry, on purpose
    const callsAtExpiry = mock.requests.length;
    expect(callsAtExpiry).toBeGreaterThan(0);
    // Read through root: the key itself is refused now.
    let batch: any;
    await expect.poll(async () => (batch = await stack.adminData('GET', `/api/batch/${created.id}`)).status, { timeout: 60_000, interval: 200 })
      .toMatch(/^(completed|failed|cancelled|expired)$/);
    // The lines already admitted (at most the window, 128) end; no new one reaches the upstream.
    // Before, the batch ran all 1,000 on its expired key.
    expect(mock.requests.length - callsAtExpiry).toBeLessThan(160);
    expect(batch.request_counts.failed).toBeGreaterThan(500);
  }, 90_000);

  it('withdraws at a cancel the lines still waiting for their channel: only those calling it finish, and only they are charged', async ({ stack, upstream, channel }) => {
    // 40 lines in flight (the window) on a 2-slot channel of 1 s calls: 2 calling, 38 waiting.
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 1000 }, { max_concurrency: 2 });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const created = await submit(openai, Array.from({ length: 40 }, (_, i) => line(model, i)));
    await expect.poll(() => mock.requests.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    const cancelledAt = Date.now();
    const callsBefore = mock.requests.length;
    await openai.batches.cancel(created.id);
    const batch = await settled(openai, created.id);
    const tookMs = Date.now() - cancelledAt;
    const { completed, failed, total } = batch.request_counts!;
    console.log(`[batch] cancel with 2 calling and the rest waiting on a 2-slot 1 s channel: cancelled in ${tookMs} ms, ${completed} completed, ${failed} cancelled, ${mock.requests.length} calls (${callsBefore} at the cancel)`);
    expect(batch.status).toBe('cancelled');
    // Before, every line in flight ran to its end: 19 more turns of 1 s.
    expect(tookMs).toBeLessThan(5000);
    expect(total).toBe(40);
    expect(completed + failed).toBe(40);
    // What was calling at the cancel finishes; nothing starts after it (one may have been
    // granted its slot as the withdrawal went out).
    expect(mock.requests.length).toBeLessThanOrEqual(callsBefore + 2);
    expect(completed).toBe(mock.requests.length);
    const errors = await fileLines(openai, batch.error_file_id);
    expect(errors.map((e) => e.error.code)).toEqual(Array.from({ length: failed }, () => 'batch_cancelled'));
    // Charged for what ran, and nothing is held any more: the withdrawn lines gave their holds back.
    const output = await fileLines(openai, batch.output_file_id);
    const usage = output.reduce((sum, l) => sum + l.response.body.usage.total_tokens, 0);
    await expect.poll(async () => (await stack.adminData('GET', `/api/token/${owner.tokenId}`)).used_quota).toBe(usage);
    const calls = mock.requests.length;
    await new Promise((r) => setTimeout(r, 1500)); // a window on purpose: no call comes after the end
    expect(mock.requests.length).toBe(calls);
  });

  it("keeps users apart: another user's key cannot see, list or cancel a batch", async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 50 }, { max_concurrency: 2 });
    const owner = await tenant(stack);
    const other = await tenant(stack);
    const stranger = client(stack, other.key);
    const own = await submit(stranger, [line(model, 0)]);
    await new Promise((r) => setTimeout(r, 1100)); // a later second: the owner's batch and file are newer
    const created = await submit(client(stack, owner.key), Array.from({ length: 20 }, (_, i) => line(model, i)));
    // Another user's id is no cursor: it told whether the id exists, and when it was made.
    expect((await stranger.batches.list({ after: created.id })).data).toEqual([]);
    expect((await stranger.files.list({ after: created.input_file_id })).data).toEqual([]);
    expect((await stranger.batches.list()).data.map((b) => b.id)).toEqual([own.id]);
    await expect(stranger.batches.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.batches.cancel(created.id)).rejects.toMatchObject({ status: 404 });
    await expect(stranger.files.content(created.input_file_id)).rejects.toMatchObject({ status: 404 });
    const listed = await stranger.batches.list();
    expect(listed.data.map((b) => b.id)).not.toContain(created.id);
    const mine = await client(stack, owner.key).batches.list();
    expect(mine.data.map((b) => b.id)).toContain(created.id);
    expect((await settled(client(stack, owner.key), created.id)).status).toBe('completed');
  });

  it('shares one capped channel between two tenants\' batches', async ({ stack, upstream, channel }) => {
    const { mock, model } = await servedModel({ upstream, channel }, { delayMs: 40 }, { max_concurrency: 4 });
    const first = client(stack, (await tenant(stack)).key);
    const second = client(stack, (await tenant(stack)).key);
    const a = await submit(first, Array.from({ length: 200 }, (_, i) => line(model, i)));
    await expect.poll(async () => (await first.batches.retrieve(a.id)).request_counts?.completed ?? 0, { timeout: 30_000 }).toBeGreaterThan(10);
    const b = await submit(second, Array.from({ length: 100 }, (_, i) => line(model, i)));
    const doneB = await settled(second, b.id);
    const aWhenBDone = await first.batches.retrieve(a.id);
    console.log(`[batch] when the second tenant's 100 lines were done, the first's 200 had ${aWhenBDone.request_counts?.completed} done`);
    expect(doneB.status).toBe('completed');
    // Fair: the second batch did not wait behind the whole of the first.
    expect(aWhenBDone.status).not.toBe('completed');
    expect((await settled(first, a.id)).status).toBe('completed');
    expect(mock.maxInFlight).toBeLessThanOrEqual(4);
  });

  it("runs another user's batch at once while one user's batches fill the batch worker", async ({ stack, upstream, channel }) => {
    // Before, batches were taken first come, first served: one user's 4 batches took the worker's
    // 3 places, and another user's batch waited for one of them to end.
    // Slow enough that the first user's batches cannot end while the test looks, on a loaded machine too.
    const slow = await upstream.openai({ delayMs: 1500 });
    const fast = await upstream.openai();
    const [slowModel, fastModel] = [`batch-${++seq}`, `batch-${++seq}`];
    await channel(slow, [slowModel], { max_concurrency: 1 });
    await channel(fast, [fastModel]);
    const first = client(stack, (await tenant(stack)).key);
    const second = client(stack, (await tenant(stack)).key);
    const many: OpenAI.Batch[] = [];
    for (let b = 0; b < 4; b++) many.push(await submit(first, Array.from({ length: 4 }, (_, i) => line(slowModel, i))));
    await expect.poll(async () => (await Promise.all(many.map((m) => first.batches.retrieve(m.id)))).filter((m) => m.status === 'in_progress').length, { timeout: 15_000 }).toBe(2);
    const other = await settled(second, (await submit(second, [line(fastModel, 0), line(fastModel, 1)])).id);
    expect(other.status).toBe('completed');
    const manyWhenOtherDone = await Promise.all(many.map((m) => first.batches.retrieve(m.id)));
    expect(manyWhenOtherDone.map((m) => m.status).filter((s) => s === 'completed'), 'none of the first user\'s batches had ended').toEqual([]);
    expect(manyWhenOtherDone.filter((m) => m.status === 'validating').length, 'two of them wait for their user\'s turn').toBe(2);
    // One waiting for its turn is cancelled at once, not when its user's running ones end.
    const waiting = manyWhenOtherDone.find((m) => m.status === 'validating')!;
    await first.batches.cancel(waiting.id);
    expect((await settled(first, waiting.id)).status).toBe('cancelled');
    expect((await Promise.all(many.map((m) => first.batches.retrieve(m.id)))).filter((m) => m.status === 'completed'), 'none had ended meanwhile').toEqual([]);
    for (const m of many) expect((await settled(first, m.id)).status).not.toBe('failed');
  });
});

/** A file upload whose form is sent up to its end, and ended by `finish`. */
function heldUpload(stack: Stack, key: string, content: string) {
  const boundary = `b${Math.random().toString(16).slice(2)}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n${content}\r\n`;
  const tail = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}--\r\n`;
  const held = { end: () => {}, finish: () => { held.end(); return answer; } };
  const answer = new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
    const url = new URL(`${stack.gateway.url}/v1/files`);
    const sent = request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': Buffer.byteLength(head + tail) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
    });
    sent.on('error', reject);
    sent.write(head);
    held.end = () => sent.end(tail);
  });
  return held;
}

describe("what one user may keep", () => {
  it('refuses a user past its files, bytes of files and open batches, counted at the commit so uploads at once cannot pass together', async ({ stack, upstream, channel }) => {
    const { mock: slow, model } = await servedModel({ upstream, channel }, { delayMs: 1000 }, { max_concurrency: 1 });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const upload = async (text: string) => openai.files.create({ file: await toFile(Buffer.from(text), 'f.jsonl'), purpose: 'batch' });
    // Many small pieces: 4 files, then two at once for the last place, both begun (their forms
    // half sent) before either ends.
    const kept: OpenAI.FileObject[] = [];
    for (let i = 0; i < 4; i++) kept.push(await upload(jsonl([line(model, i)])));
    const both = [heldUpload(stack, owner.key, jsonl([line(model, 8)])), heldUpload(stack, owner.key, jsonl([line(model, 9)]))];
    // A window for both forms to reach the gateway (unseen from here; one late is refused all the same).
    await new Promise((r) => setTimeout(r, 500));
    const race = await Promise.all(both.map((held) => held.finish()));
    expect(race.map((r) => r.status).sort()).toEqual([200, 429]);
    const refused = race.find((r) => r.status === 429)!;
    expect(refused.body.error.message).toMatch(/FILE_USER_MAX_FILES/);
    expect(refused.headers['x-should-retry']).toBe('false');
    kept.push(race.find((r) => r.status === 200)!.body);
    expect((await upload(jsonl([line(model, 10)])).catch((e) => e)).status, 'a sixth, later').toBe(429);
    // One large piece: past the bytes left, refused as it passes them, and nothing kept of it.
    await openai.files.delete(kept.pop()!.id);
    const large = await upload(jsonl(Array.from({ length: 12_000 }, (_, i) => line(model, i)))).catch((e) => e);
    expect(large.status).toBe(429);
    expect(large.message).toMatch(/FILE_USER_MAX_BYTES/);
    expect((await openai.files.list()).data).toHaveLength(4);
    kept.push(await upload(jsonl([line(model, 11)])));

    // Batches not yet ended: 5, then the sixth waits for one to end.
    const open = [];
    for (const file of kept) open.push(await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }));
    const sixth = await openai.batches.create({ input_file_id: kept[0]!.id, endpoint: '/v1/completions', completion_window: '24h' }).catch((e) => e);
    expect(sixth.status).toBe(429);
    expect(sixth.message).toMatch(/BATCH_USER_OPEN/);
    // The last waits for its user's turn: its input file deleted meanwhile, it fails saying so
    // (before, it failed as "the input file has no lines", or ran the pages read before the delete).
    await openai.files.delete(kept[4]!.id);
    for (const batch of open.slice(0, 4)) await openai.batches.cancel(batch.id);
    for (const batch of open.slice(0, 4)) expect(['cancelled', 'completed']).toContain((await settled(openai, batch.id)).status);
    const orphan = await settled(openai, open[4]!.id);
    expect(orphan.status).toBe('failed');
    expect(orphan.errors!.data!.map((e) => [e.code, e.param])).toEqual([['input_file_deleted', 'input_file_id']]);
    expect((await openai.batches.create({ input_file_id: kept[0]!.id, endpoint: '/v1/completions', completion_window: '24h' })).status, 'once they ended').toBe('validating');
  });
});

describe('what one user may keep, by way of its batches', () => {
  it('counts the lines each batch copies from its input, whether the file is kept or deleted', async ({ stack }) => {
    // Upload, batch, delete, again: each batch kept a copy of its file's lines, and the user's
    // files never grew past the cap while the database did. And one file kept and run as many
    // batches: each copy went uncounted (twelve held 5.7 times the cap).
    const openai = client(stack, (await tenant(stack)).key);
    const text = jsonl(Array.from({ length: 3500 }, (_, i) => line('absent-model', i)));
    expect(text.length).toBeGreaterThan(400_000);
    expect(text.length).toBeLessThan(512 * 1024);
    const upload = async () => openai.files.create({ file: await toFile(Buffer.from(text), 'f.jsonl'), purpose: 'batch' });
    const file = await upload();
    const batch = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' });
    // The file and one copy fit the cap (1 MiB); a second copy of the same file does not.
    const second = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }).catch((e) => e);
    expect(second.status).toBe(429);
    expect(second.message).toMatch(/FILE_USER_MAX_BYTES/);
    expect(second.headers.get('x-should-retry')).toBe('false');
    await openai.batches.cancel(batch.id);
    await openai.files.delete(file.id);
    // The copy still counts: one more upload fits beside it, a second does not.
    await upload();
    const again = await upload().catch((e) => e);
    expect(again.status).toBe(429);
    expect(again.message).toMatch(/FILE_USER_MAX_BYTES/);
  });

  it('counts what a batch keeps that copies nothing (an empty file, the largest metadata), so ended batches cannot grow the database past the cap', async ({ stack }) => {
    // 300 batches over an empty file, each failed at once (so never more than BATCH_USER_OPEN
    // open) with 16 pairs of the longest metadata, took 9 MB of PostgreSQL and counted for none.
    const openai = client(stack, (await tenant(stack)).key);
    const empty = await openai.files.create({ file: await toFile(Buffer.alloc(0), 'empty.jsonl'), purpose: 'batch' });
    const metadata = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`${i}`.padEnd(64, 'k'), '漢'.repeat(512)]));
    let created = 0;
    let refused: any;
    while (!refused && created < 200) {
      const batch = await openai.batches.create({ input_file_id: empty.id, endpoint: '/v1/completions', completion_window: '24h', metadata }).catch((e) => e);
      if (batch.status === 429 && /FILE_USER_MAX_BYTES/.test(batch.message)) refused = batch;
      else if (batch.status === 429) await new Promise((r) => setTimeout(r, 200)); // BATCH_USER_OPEN: wait for them to fail
      else created++;
    }
    // About 25 KB each (16 × 512 three-byte characters, and the row): a 1 MiB cap holds about 40.
    expect(refused, `created ${created}`).toBeDefined();
    expect(created).toBeGreaterThan(20);
    expect(created).toBeLessThan(60);
  }, 60_000);
});

describe('the Batch API on the other OpenAI endpoints', () => {
  for (const [endpoint, body, check] of [
    ['/v1/chat/completions', (model: string, i: number) => ({ model, messages: [{ role: 'user', content: `question ${i}` }] }), (r: any) => expect(r.choices[0].message.content).toBe('batch chat')],
    ['/v1/embeddings', (model: string, i: number) => ({ model, input: `text ${i}`, encoding_format: 'float' }), (r: any) => expect(r.data[0].embedding).toHaveLength(8)],
  ] as const) {
    it(`runs ${endpoint} lines`, async ({ stack, upstream, channel }) => {
      const { mock, model } = await servedModel({ upstream, channel }, { text: 'batch chat' });
      const owner = await tenant(stack);
      const openai = client(stack, owner.key);
      const lines = Array.from({ length: 20 }, (_, i) => ({ custom_id: `req-${i}`, method: 'POST', url: endpoint, body: body(model, i) }));
      const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'batch.jsonl'), purpose: 'batch' });
      const batch = await settled(openai, (await openai.batches.create({ input_file_id: file.id, endpoint, completion_window: '24h' })).id);
      expect(batch.status).toBe('completed');
      const output = await fileLines(openai, batch.output_file_id);
      expect(output.map((l) => l.custom_id)).toEqual(lines.map((l) => l.custom_id));
      for (const result of output) {
        expect(result.response.status_code).toBe(200);
        check(result.response.body);
      }
      expect(new Set(mock.requests.map((r) => r.path))).toEqual(new Set([endpoint]));
    });
  }
});
