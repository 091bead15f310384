/**
 * The Batch API through crashes (issue 19): a completion worker, the gateway and the batch worker
 * killed with SIGKILL mid-batch, Redis and PostgreSQL restarted mid-batch, and a batch that runs
 * out of its completion window. After each, every line is in the batch's files exactly once, in
 * input order, and the key was charged once for each line that was answered: what the
 * output file's usage adds up to, not a token more or less.
 */
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { startMockOpenAIUpstream, type MockOpenAIUpstream, type ServiceName, type Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const LEASE_MS = 3000;
const echo = (prompt: string) => `re: ${prompt}`;

const it = stackTest({
  database: true,
  startTimeoutMs: 90_000,
  workers: ['completion-worker', 'batch-worker'],
  // A killed batch worker's batches are taken over after 3 s instead of 15.
  env: { BATCH_LEASE_MS: String(LEASE_MS), SHUTDOWN_TIMEOUT_MS: '5000' },
});

/** One upstream behind the one channel for the whole file: each test resets it and sets its behaviour. */
let mock: MockOpenAIUpstream;
let seq = 0;

it.beforeAll(async ({ stack }) => {
  mock = await startMockOpenAIUpstream();
  await stack.add('completion-worker');
  await stack.adminData('POST', '/api/channel/', { name: 'batch', type: 'openai', key: 'sk-up', base_url: mock.url, models: ['m'], timeout_ms: 20_000, max_concurrency: 8 });
}, 90_000);
it.afterAll(async () => {
  await mock?.close();
});

const client = (stack: Stack, key: string, url = stack.gateway.url) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000 });

async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `fault${++seq}`, password: 'batch-password' });
  const { id, key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { key: key as string, tokenId: id as number };
}

async function submit(openai: OpenAI, lines: number) {
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model: 'm', prompt: `prompt ${i}`, max_tokens: 5 } }),
  ).join('\n');
  const file = await openai.files.create({ file: await toFile(Buffer.from(text), 'batch.jsonl'), purpose: 'batch' });
  return openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' });
}

/** Polls through whichever gateway is up (`openai()` is asked again each time), riding out 503s. */
async function settled(openai: () => OpenAI, id: string, timeoutMs = 90_000): Promise<OpenAI.Batch> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await openai().batches.retrieve(id).catch(() => undefined);
    if (batch && ['completed', 'failed', 'cancelled', 'expired'].includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${id} not ended after ${timeoutMs} ms: ${JSON.stringify(batch?.request_counts)}`);
    await new Promise((r) => setTimeout(r, 250)); // the poll's pace
  }
}

async function completedSoFar(openai: OpenAI, id: string): Promise<number> {
  return (await openai.batches.retrieve(id)).request_counts?.completed ?? 0;
}

async function fileLines(openai: OpenAI, id: string | null | undefined): Promise<any[]> {
  if (!id) return [];
  const text = await (await openai.files.content(id)).text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/**
 * Every line once, in input order, across the output and error files; the key charged exactly
 * what the answered lines used. Returns the output lines.
 */
async function expectEachLineOnce(stack: Stack, openai: OpenAI, batch: OpenAI.Batch, lines: number, tokenId: number): Promise<any[]> {
  const output = await fileLines(openai, batch.output_file_id);
  const errors = await fileLines(openai, batch.error_file_id);
  const ids = [...output, ...errors].map((l) => Number(l.custom_id.slice(4))).sort((a, b) => a - b);
  expect(ids).toEqual(Array.from({ length: lines }, (_, i) => i));
  expect(output.map((l) => Number(l.custom_id.slice(4)))).toEqual([...output.map((l) => Number(l.custom_id.slice(4)))].sort((a, b) => a - b));
  expect(batch.request_counts).toEqual({ total: lines, completed: output.length, failed: errors.length });
  for (const l of output) expect(l.response.body.choices[0].text).toContain(`prompt ${l.custom_id.slice(4)}`);
  for (const e of errors.filter((e) => e.error?.code !== 'batch_expired')) console.log(`[batch-fault] line ${e.custom_id} failed: ${JSON.stringify(e).slice(0, 300)}`);
  const used = output.reduce((sum, l) => sum + l.response.body.usage.total_tokens, 0);
  // Charged with each line's hold released: written before its answer left the worker.
  const key = await stack.adminData('GET', `/api/token/${tokenId}`);
  expect(key.used_quota).toBe(used);
  return output;
}

/** A new tenant's batch of 600 lines on the 30 ms upstream, once more than 100 are done: the moment to strike. */
async function midBatch(stack: Stack) {
  mock.reset();
  mock.setBehaviour({ delayMs: 30, text: echo });
  const owner = await tenant(stack);
  const openai = client(stack, owner.key);
  const created = await submit(openai, 600);
  await expect.poll(() => completedSoFar(openai, created.id), { timeout: 30_000, interval: 50 }).toBeGreaterThan(100);
  return { owner, openai, created };
}

function running(stack: Stack, name: ServiceName) {
  return stack.services.filter((s) => s.name === name && s.child.exitCode === null && s.child.signalCode === null);
}

describe('a batch through crashes and restarts', () => {
  it('loses no line and charges none twice when a completion worker is killed with SIGKILL mid-batch', async ({ stack }) => {
    const { owner, openai, created } = await midBatch(stack);
    const [victim] = running(stack, 'completion-worker');
    await victim!.stop('SIGKILL');
    await stack.add('completion-worker');
    const batch = await settled(() => openai, created.id);
    expect(batch.status).toBe('completed');
    const output = await expectEachLineOnce(stack, openai, batch, 600, owner.tokenId);
    console.log(`[batch-fault] kill -9 completion-worker: 600 lines, ${output.length} completed, ${mock.requests.length} upstream calls (a call cut short by the kill is made again)`);
    expect(output.length).toBe(600);
  }, 120_000);

  it('ends a line whose completion worker dies under it twice as failed, with an error, and runs it no third time', async ({ stack }) => {
    mock.reset();
    mock.setBehaviour({ hang: true });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key);
    const created = await submit(openai, 1);
    // Before, the line was failed unrun and unanswered: the batch sent it again, and it killed
    // the worker again after each restart (24 lines of 36 MB replies, 2 of 2 runs).
    for (let run = 1; run <= 2; run++) {
      await mock.waitFor((m) => m.requests.length >= run, 60_000);
      await Promise.all(running(stack, 'completion-worker').map((w) => w.stop('SIGKILL')));
      await stack.add('completion-worker');
    }
    const batch = await settled(() => openai, created.id);
    mock.setBehaviour({});
    expect(batch.request_counts).toEqual({ total: 1, completed: 0, failed: 1 });
    const [line] = await fileLines(openai, batch.error_file_id);
    expect(line.response.status_code).toBe(500);
    expect(JSON.stringify(line)).toMatch(/worker process died .*, twice; it is not run again/);
    expect(mock.requests.length).toBe(2);
    await stack.add('completion-worker');
  }, 180_000);

  it('loses no line when the gateway is killed with SIGKILL mid-batch; a new gateway reports it', async ({ stack }) => {
    mock.reset();
    mock.setBehaviour({ delayMs: 30, text: echo });
    const owner = await tenant(stack);
    const created = await submit(client(stack, owner.key), 600);
    await expect.poll(() => completedSoFar(client(stack, owner.key), created.id), { timeout: 30_000, interval: 50 }).toBeGreaterThan(100);
    await stack.gateway.stop('SIGKILL');
    const killedAt = Date.now();
    stack.gateway = await stack.add('gateway');
    const batch = await settled(() => client(stack, owner.key), created.id);
    expect(batch.status).toBe('completed');
    // The batch ran on without any gateway: none is on its path.
    expect(batch.completed_at! * 1000).toBeGreaterThan(killedAt - 1000);
    const output = await expectEachLineOnce(stack, client(stack, owner.key), batch, 600, owner.tokenId);
    expect(output.length).toBe(600);
    expect(mock.requests.length).toBe(600);
  }, 120_000);

  it('loses no line and runs none twice when the batch worker is killed with SIGKILL: another takes the batch over', async ({ stack }) => {
    const { owner, openai, created } = await midBatch(stack);
    const [victim] = running(stack, 'batch-worker');
    await victim!.stop('SIGKILL');
    const killedAt = Date.now();
    const atKill = await openai.batches.retrieve(created.id);
    await stack.add('batch-worker');
    const batch = await settled(() => openai, created.id);
    console.log(`[batch-fault] kill -9 batch-worker at ${atKill.request_counts?.completed}/600; finished ${Date.now() - killedAt} ms later (lease ${LEASE_MS} ms), ${mock.requests.length} upstream calls`);
    expect(batch.status).toBe('completed');
    const output = await expectEachLineOnce(stack, openai, batch, 600, owner.tokenId);
    expect(output.length).toBe(600);
    // The lines in flight at the kill ran on; the new holder followed their replies instead of
    // sending them again.
    expect(mock.requests.length).toBe(600);
  }, 120_000);

  it('loses no line when Redis is stopped for 2 s mid-batch and restarted', async ({ stack }) => {
    const { owner, openai, created } = await midBatch(stack);
    await stack.redis.stop();
    await new Promise((r) => setTimeout(r, 2000)); // Redis stays down 2 s: what the test is about
    await stack.redis.restart();
    const batch = await settled(() => openai, created.id);
    expect(batch.status).toBe('completed');
    const output = await expectEachLineOnce(stack, openai, batch, 600, owner.tokenId);
    console.log(`[batch-fault] Redis stopped 2 s: 600 lines, ${output.length} completed, ${mock.requests.length} upstream calls`);
    expect(output.length).toBe(600);
  }, 120_000);

  it('pauses while PostgreSQL is down (503 for the Files and Batches routes, live requests unharmed) and resumes by itself', async ({ stack }) => {
    const { owner, openai, created } = await midBatch(stack);
    await stack.postgres!.stop({ hard: true });
    try {
      for (const call of [() => openai.batches.retrieve(created.id), () => openai.files.list(), () => openai.batches.list()]) {
        const refused = await call().then(() => undefined, (error: unknown) => error as InstanceType<typeof OpenAI.APIError>);
        expect(refused?.status).toBe(503);
        expect(refused?.headers?.get('retry-after')).toBeTruthy();
      }
      // A live request does not touch PostgreSQL.
      const live = await openai.completions.create({ model: 'm', prompt: 'live while PostgreSQL is down', max_tokens: 5 });
      expect(live.choices[0]!.text).toContain('live while PostgreSQL is down');
      await new Promise((r) => setTimeout(r, 2000)); // PostgreSQL stays down 2 s more: the test's timeline
    } finally {
      await stack.postgres!.restart();
    }
    const batch = await settled(() => openai, created.id);
    expect(batch.status).toBe('completed');
    // The live request was charged too: count it apart.
    const output = await fileLines(openai, batch.output_file_id);
    const ids = output.map((l) => l.custom_id);
    expect(ids).toEqual(Array.from({ length: 600 }, (_, i) => `req-${i}`));
    expect(batch.request_counts).toEqual({ total: 600, completed: 600, failed: 0 });
    console.log(`[batch-fault] PostgreSQL killed for 2 s: 600 lines completed, ${mock.requests.length - 1} upstream calls for them`);
  }, 120_000);

  it('ends what is left as expired at the end of the completion window', async ({ stack }) => {
    mock.reset();
    mock.setBehaviour({ delayMs: 200, text: echo });
    // A gateway whose "24h" lasts 3 s: it writes the window into the batch when it is created.
    const brief = await stack.add('gateway', { BATCH_COMPLETION_WINDOW_MS: '3000' });
    const owner = await tenant(stack);
    const openai = client(stack, owner.key, brief.url);
    const created = await submit(openai, 200);
    expect(created.expires_at! - created.created_at).toBe(3);
    const batch = await settled(() => openai, created.id, 30_000);
    expect(batch.status).toBe('expired');
    expect(batch.expired_at).toBeGreaterThanOrEqual(created.expires_at!);
    const output = await expectEachLineOnce(stack, openai, batch, 200, owner.tokenId);
    const errors = await fileLines(openai, batch.error_file_id);
    // 8 slots × 200 ms for 3 s: about 120 lines ran, the rest expired unrun.
    expect(output.length).toBeGreaterThan(20);
    expect(errors.length).toBeGreaterThan(20);
    expect(new Set(errors.map((e) => e.error.code))).toEqual(new Set(['batch_expired']));
    // The calls running at the expiry were cancelled (not charged): at most one a slot.
    expect(mock.requests.length).toBeGreaterThanOrEqual(output.length);
    expect(mock.requests.length).toBeLessThanOrEqual(output.length + 8);
    console.log(`[batch-fault] expiry after 3 s: ${output.length} completed, ${errors.length} expired, ${mock.requests.length - output.length} calls cut short`);
    await brief.stop('SIGTERM');
  }, 60_000);
});
