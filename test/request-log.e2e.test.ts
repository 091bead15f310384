/**
 * The request log (issue 21), end to end: real gateway and worker processes, Redis, PostgreSQL
 * and mock upstreams. One row per model request, whichever process ended it, with each channel
 * tried and why it was left, its tokens equal to what was charged, and the management API's
 * reads over it.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import pg from 'pg';
import { stackTest } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const it = stackTest({ database: true, workers: ['completion-worker'], env: { CHANNEL_FAILURES_BEFORE_COOLDOWN: '1000', LOG_QUERY_TIMEOUT_MS: '3000' } });

let seq = 0;
const client = (stack: Stack, key: string, requestId?: string) => new OpenAI({
  baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000,
  ...(requestId ? { defaultHeaders: { 'x-request-id': requestId } } : {}),
});

async function logPage(stack: Stack, query: Record<string, string | number>, token?: string) {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  return stack.admin('GET', `/api/log/?${search}`, undefined, token);
}

/**
 * Until `count` reads of the log wait on the lock `locker` holds in PostgreSQL (the log's writer,
 * blocked too, not counted): they have passed the gateway's turns and hold a connection each.
 */
async function readsBlockedBy(locker: pg.Client, count: number): Promise<void> {
  await expect.poll(async () => {
    await locker.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await locker.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query !~* '^\\s*insert'");
    return rows[0]!.n;
  }, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(count);
}

async function rowOf(stack: Stack, requestId: string): Promise<any> {
  let row: any;
  await expect.poll(async () => {
    row = (await logPage(stack, { request_id: requestId })).body.data?.items?.[0];
    return row !== undefined;
  }, { timeout: 15_000, interval: 250 }).toBe(true);
  return row;
}

describe('the request log', () => {
  it('records a failover with each channel tried and why it was left, and a stream, their tokens what was charged', async ({ stack, upstream, channel, apiKey }) => {
    const model = `log-${++seq}`;
    const failing = await upstream.openai({ status: 500 });
    const good = await upstream.openai({ text: 'hello from the good one' });
    const bad = await channel(failing, [model], { priority: 10 });
    const ok = await channel(good, [model], { priority: 0 });
    // A channel whose upstream refuses connections (nothing listens there), tried between them.
    const refused = await channel({ url: 'http://127.0.0.1:9' } as any, [model], { priority: 5 });
    const key = await apiKey({ name: 'logged-key' });

    const whole = await client(stack, key.key, `whole-${seq}`).completions.create({ model, prompt: 'hi', max_tokens: 5 });
    const row = await rowOf(stack, `whole-${seq}`);
    expect(row).toMatchObject({
      request_id: `whole-${seq}`, token_id: key.id, token_name: 'logged-key', route: '/v1/completions', model,
      channel_id: ok.id, status: 200, priority: 'interactive', streamed: false,
      prompt_tokens: whole.usage!.prompt_tokens, completion_tokens: whole.usage!.completion_tokens,
      total_tokens: whole.usage!.total_tokens, quota: whole.usage!.total_tokens,
    });
    expect(row.attempts.map((a: any) => [a.channel_id, a.status ?? a.error])).toEqual([
      [bad.id, 500], [refused.id, 'connection ECONNREFUSED'], [ok.id, 200],
    ]);
    expect(row.attempts[1].host).toBe('127.0.0.1:9');
    for (const field of ['queue_ms', 'slot_ms', 'first_byte_ms', 'upstream_ms', 'total_ms']) expect(row[field], field).toBeGreaterThanOrEqual(0);
    expect(row.prompt, 'no prompt text by default').toBeUndefined();

    const stream = await client(stack, key.key, `stream-${seq}`).completions.create({ model, prompt: 'hi', stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(await rowOf(stack, `stream-${seq}`)).toMatchObject({ streamed: true, status: 200, total_tokens: usage!.total_tokens, channel_id: ok.id });
    const used = (await stack.adminData('GET', `/api/token/${key.id}`)).used_quota;
    expect(used).toBe(whole.usage!.total_tokens + usage!.total_tokens);
  });

  it('records a request no channel could serve, with why, and one refused before its job', async ({ stack, upstream, channel, apiKey }) => {
    const model = `log-${++seq}`;
    const down = await upstream.openai({ status: 503 });
    await channel(down, [model]);
    const key = await apiKey({ unlimited_quota: true });
    const failed = await client(stack, key.key, `failed-${seq}`).completions.create({ model, prompt: 'hi' }).catch((e) => e);
    expect(failed.status).toBe(502);
    const row = await rowOf(stack, `failed-${seq}`);
    expect(row).toMatchObject({ status: 502, error_code: failed.code ?? expect.any(String), total_tokens: 0 });
    expect(row.attempts).toEqual([expect.objectContaining({ status: 503, error: 'http' })]);

    // A request admission refuses after its body (the key's requests per minute): no job, and
    // the gateway writes its row.
    const limited = await apiKey({ rpm_limit: 1 });
    await client(stack, limited.key).completions.create({ model, prompt: 'hi' }).catch(() => {});
    const refused = await client(stack, limited.key, `refused-${seq}`).completions.create({ model, prompt: 'hi' }).catch((e) => e);
    expect(refused.status).toBe(429);
    expect(await rowOf(stack, `refused-${seq}`)).toMatchObject({ status: 429, error_code: expect.any(String), attempts: [], token_id: limited.id, total_tokens: 0 });

    // One X-Request-Id on 40 requests sent at once (a client that reuses its id; two tenants who
    // chose the same): each answer echoes it, and each request keeps a row of its own (keyed by
    // arrival and the id, 40 left 23 rows, those of one millisecond merged), its own user's.
    const shared = `shared-${seq}`;
    const other = await apiKey({ unlimited_quota: true });
    const statuses = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const answer = await fetch(`${stack.gateway.url}/v1/completions`, {
        method: 'POST', body: JSON.stringify({ model, prompt: 'hi' }),
        headers: { authorization: `Bearer ${(i % 4 ? key : other).key}`, 'content-type': 'application/json', 'x-request-id': shared },
      });
      await answer.arrayBuffer();
      return `${answer.status} ${answer.headers.get('x-request-id')}`;
    }));
    expect(new Set(statuses)).toEqual(new Set([`502 ${shared}`]));
    const sharedRows = async (token: number) => (await logPage(stack, { request_id: shared, token_id: token, page_size: 1 })).body.data?.total;
    await expect.poll(async () => [await sharedRows(key.id), await sharedRows(other.id)], { timeout: 15_000, interval: 250 }).toEqual([30, 10]);
  });

  it('answers administrators every row, a user its own, refuses a common user the whole log, and sums by model', async ({ stack, upstream, channel }) => {
    const model = `log-${++seq}`;
    const mock = await upstream.openai({ text: 'x' });
    await channel(mock, [model]);
    const user = await stack.adminData('POST', '/api/user/', { username: `logger${seq}`, password: 'logger-password' });
    const { key } = await stack.adminData('POST', '/api/token/', { name: 'mine', user_id: user.id, unlimited_quota: true });
    for (let i = 0; i < 3; i++) await client(stack, key, `own-${seq}-${i}`).completions.create({ model, prompt: 'hi' });
    await rowOf(stack, `own-${seq}-2`);
    const login = await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `logger${seq}`, password: 'logger-password' }) });
    const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;

    expect((await logPage(stack, {}, token)).status).toBe(403);
    const own = await stack.admin('GET', '/api/log/self?page_size=100', undefined, token);
    expect(own.status).toBe(200);
    expect(own.body.data.total).toBe(3);
    expect(own.body.data.items.every((r: any) => r.user_id === user.id)).toBe(true);
    const stat = await stack.admin('GET', `/api/log/stat?group_by=model&interval=day&model_name=${model}`, undefined, token);
    expect(stat.body.data).toEqual([expect.objectContaining({ key: model, requests: 3, errors: 0, bucket: expect.any(Number) })]);
    // Channels are the administrators': a user's own rows never say where its requests went, not
    // even the host of an upstream that could not be reached (its error said only upstream_error).
    const unreachable = `log-down-${seq}`;
    await stack.adminData('POST', '/api/channel/', { name: 'internal', type: 'openai', key: 'sk-internal-0123456789abcdef', base_url: 'http://127.0.0.1:9', models: [unreachable] });
    await client(stack, key, `down-${seq}`).completions.create({ model: unreachable, prompt: 'hi' }).catch(() => {});
    const failedRow = await rowOf(stack, `down-${seq}`);
    expect(failedRow.attempts[0].host, 'the administrators see it').toBe('127.0.0.1:9');
    const mine = (await stack.admin('GET', '/api/log/self?page_size=100', undefined, token)).body.data.items;
    expect(mine.length).toBe(4);
    expect(JSON.stringify(mine)).not.toMatch(/127\.0\.0\.1:9|"channel_id"|"upstream_model"|"host"/);
    // Of a failed try, its kind and code only: an error's message may name an address too.
    expect(mine.find((r: any) => r.model === unreachable).attempts[0]).toEqual({ error: 'connection ECONNREFUSED', ms: expect.any(Number) });
    for (const path of ['/api/log/stat?group_by=channel', `/api/log/self?channel=${failedRow.channel_id}`, `/api/log/stat?channel=${failedRow.channel_id}`]) {
      expect((await stack.admin('GET', path, undefined, token)).status, path).toBe(403);
    }
    expect((await stack.admin('GET', '/api/log/self', undefined, 'not-a-token')).status).toBe(401);
    expect((await logPage(stack, { status: 'abc' })).status).toBe(400);
    // Past what PostgreSQL's timestamps and integers take: a 400, not a 500 from the query.
    for (const query of [{ start_timestamp: 9007199254740991 }, { end_timestamp: 99999999999999 }, { user_id: 3_000_000_000 }, { channel: 3_000_000_000 }] as Record<string, number>[]) {
      expect((await logPage(stack, query)).status, JSON.stringify(query)).toBe(400);
    }
    expect((await stack.admin('GET', '/api/log/stat?token_id=3000000000', undefined, token)).status).toBe(400);
  });

  it("runs a user's reads of the log one at a time, one more waiting, on connections of their own, and cancels one past LOG_QUERY_TIMEOUT_MS", async ({ stack }) => {
    // 30 heavy reads at once by one user took the gateway's one pool, and other tenants' file
    // and batch requests got 503 after 6 s. The table is locked here, so every read waits.
    const user = await stack.adminData('POST', '/api/user/', { username: `reader${++seq}`, password: 'reader-password' });
    const login = await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `reader${seq}`, password: 'reader-password' }) });
    const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
    const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
    const locker = new pg.Client({ connectionString: stack.postgres!.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE request_log IN ACCESS EXCLUSIVE MODE');
    try {
      const started = Date.now();
      const reads = [stack.admin('GET', '/api/log/self', undefined, token), stack.admin('GET', '/api/log/stat?interval=minute', undefined, token)];
      // The first runs (the second, sent with it, waits its turn in the gateway).
      await readsBlockedBy(locker, 1);
      expect((await stack.admin('GET', '/api/log/self', undefined, token)).status, 'a third at once').toBe(429);
      // The files and batches of everyone answer meanwhile: their pool is another.
      const files = await fetch(`${stack.gateway.url}/v1/files`, { headers: { authorization: `Bearer ${key}` } });
      expect(files.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2500);
      const answers = await Promise.all(reads);
      // The first ran past the time limit; the second waited its turn as long as a read may run.
      expect(answers.map((a) => a.status)).toEqual([503, 503]);
      expect(answers[0]!.body.message ?? answers[0]!.body.error?.message).toMatch(/LOG_QUERY_TIMEOUT_MS/);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await stack.admin('GET', '/api/log/self', undefined, token)).status, 'and again once they ended').toBe(200);
  });

  it("counts the operations console's reads of the log with the management API's, and answers one past the time limit 503, not 500", async ({ stack }) => {
    const locker = new pg.Client({ connectionString: stack.postgres!.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE request_log IN ACCESS EXCLUSIVE MODE');
    try {
      const reads = [stack.admin('GET', '/admin/api/log'), stack.admin('GET', '/admin/api/log/stat?interval=minute')];
      // The first runs (the second, sent with it, waits its turn in the gateway).
      await readsBlockedBy(locker, 1);
      expect((await stack.admin('GET', '/api/log/')).status, 'a third at once, through the management API').toBe(429);
      expect((await stack.admin('GET', '/admin/api/log')).status, 'or the console').toBe(429);
      const answers = await Promise.all(reads);
      expect(answers.map((a) => a.status)).toEqual([503, 503]);
      expect(answers[0]!.body.message).toMatch(/LOG_QUERY_TIMEOUT_MS/);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await stack.admin('GET', '/admin/api/log')).status).toBe(200);
  });

  it("shares the log's connections between users, one read at a time each, and keeps one for administrators: two, then three tenants' slow reads stop no one else", async ({ stack }) => {
    // Two tenants with large logs held the 3 connections (2 each), and everyone, the console
    // included, got 503 "PostgreSQL unavailable" after 8 to 10 s. Their reads here are of a day
    // whose partition is locked, so they run until LOG_QUERY_TIMEOUT_MS; the others read today.
    const reader = async () => {
      const name = `fair${++seq}`;
      await stack.adminData('POST', '/api/user/', { username: name, password: 'reader-password' });
      const login = await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: name, password: 'reader-password' }) });
      return ((await login.json()) as { data: { access_token: string } }).data.access_token;
    };
    const [a, b, c, d] = [await reader(), await reader(), await reader(), await reader()];
    const day = Date.parse('2020-01-01T00:00:00Z') / 1000;
    const slow = (token: string) => stack.admin('GET', `/api/log/stat?interval=hour&start_timestamp=${day}&end_timestamp=${day + 86_400}`, undefined, token);
    const today = `start_timestamp=${Math.floor(Date.now() / 1000) - 3600}`;
    const timed = async (read: Promise<{ status: number; body: any; headers: Headers }>) => {
      const started = Date.now();
      const answer = await read;
      return { ...answer, ms: Date.now() - started };
    };
    const locker = new pg.Client({ connectionString: stack.postgres!.url });
    await locker.connect();
    await locker.query(`CREATE TABLE IF NOT EXISTS request_log_20200101 PARTITION OF request_log FOR VALUES FROM ('2020-01-01') TO ('2020-01-02')`);
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE request_log_20200101 IN ACCESS EXCLUSIVE MODE');
    try {
      const stuck = [slow(a), slow(a), slow(b), slow(b)];
      // One read of each runs; their second ones wait their turns.
      await readsBlockedBy(locker, 2);
      const third = await timed(stack.admin('GET', `/api/log/self?${today}`, undefined, c));
      const admin = await timed(stack.admin('GET', `/api/log/?${today}`));
      const consoleRead = await timed(stack.admin('GET', `/admin/api/log?${today}`));
      console.log(`[log reads] beside two tenants' slow reads: a third user ${third.ms} ms, an administrator ${admin.ms} ms, the console ${consoleRead.ms} ms`);
      for (const read of [third, admin, consoleRead]) {
        expect(read.status).toBe(200);
        expect(read.ms).toBeLessThan(1500);
      }
      // Variant: a third tenant's slow read takes the last shared connection; the administrators
      // still read at once, and a fourth user waits its turn or is told the log is busy.
      stuck.push(slow(d));
      await readsBlockedBy(locker, 3);
      const adminAgain = await timed(stack.admin('GET', `/admin/api/log?${today}`));
      expect(adminAgain.status).toBe(200);
      expect(adminAgain.ms).toBeLessThan(1500);
      const waiting = await stack.admin('GET', `/api/log/self?${today}`, undefined, c);
      console.log(`[log reads] beside three: an administrator ${adminAgain.ms} ms; the fourth user ${waiting.status}`);
      if (waiting.status !== 200) {
        expect(waiting.status).toBe(503);
        expect(waiting.body.message).toMatch(/request log is busy/);
        expect(Number(waiting.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      for (const answer of await Promise.all(stuck)) {
        expect([200, 503]).toContain(answer.status);
        if (answer.status === 503) expect(answer.body.message).toMatch(/LOG_QUERY_TIMEOUT_MS|request log is busy/);
        expect(answer.body.message ?? '').not.toMatch(/unavailable/);
      }
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
  });

  it('has exactly one row per request after 5,000 with failovers, cancellations and streams, their tokens what the key was charged', async ({ stack, upstream, channel, apiKey }) => {
    const model = `log-${++seq}`;
    // The first channel fails one call in three: those requests fail over to the second.
    const flaky = await upstream.openai({ text: 'a b c d e f', delayMs: 5 });
    let calls = 0;
    const flakyScript = setInterval(() => {
      if (flaky.requests.length > calls) {
        calls = flaky.requests.length;
        flaky.next({ status: 500 }, {}, {});
      }
    }, 5);
    const steady = await upstream.openai({ text: 'one two three four five six seven eight', delayMs: 10, chunkDelayMs: 2 });
    await channel(flaky, [model], { priority: 10 });
    await channel(steady, [model], { priority: 0 });
    const key = await apiKey();
    const N = 5_000; // the same cases as 10,000 (which took 35 s of the suite's ten minutes)
    const ids = Array.from({ length: N }, (_, i) => `load-${seq}-${i}`);
    const outcomes: Record<string, number> = {};
    const answered: string[] = [];
    let next = 0;
    const one = async (i: number) => {
      const stream = i % 3 === 1;
      // One in ten leaves early: while queued, waiting, or mid-stream.
      const signal = i % 10 === 7 ? AbortSignal.timeout(5 + (i % 30)) : undefined;
      const body = JSON.stringify({ model, prompt: `p${i}`, max_tokens: 8, ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}) });
      const outcome = await fetch(`${stack.gateway.url}/v1/completions`, {
        method: 'POST', body, signal,
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'x-request-id': ids[i]! },
      }).then(async (r) => { await r.text(); return String(r.status); }, () => 'left');
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (outcome !== 'left') answered.push(ids[i]!);
    };
    await Promise.all(Array.from({ length: 64 }, async () => { while (next < N) await one(next++); }));
    clearInterval(flakyScript);
    console.log(`[request log] ${N} requests: ${JSON.stringify(outcomes)}`);
    expect(outcomes.left).toBeGreaterThan(0);

    const db = new pg.Client({ connectionString: stack.postgres!.url });
    await db.connect();
    try {
      const counted = async () => (await db.query(`SELECT count(*)::int AS rows, count(DISTINCT request_id)::int AS ids, coalesce(sum(quota), 0)::int AS quota,
        count(*) FILTER (WHERE jsonb_array_length(attempts) > 1)::int AS failovers, count(*) FILTER (WHERE status = 499)::int AS cancelled,
        count(*) FILTER (WHERE streamed)::int AS streamed FROM request_log WHERE token_id = $1`, [key.id])).rows[0];
      // Every request the gateway answered has its row; one whose client left early has one too,
      // unless it left before the gateway had the whole of it (then the gateway never saw it).
      const missing = async (of: string[]) => (await db.query(`SELECT id FROM unnest($1::text[]) AS id WHERE id NOT IN (SELECT request_id FROM request_log WHERE token_id = $2)`, [of, key.id])).rows.map((r) => r.id as string);
      await expect.poll(async () => (await missing(answered)).length, { timeout: 30_000, interval: 500 }).toBe(0);
      // A window on purpose: the last rows of requests that left (which have no id to wait for)
      // would come in it, and a second row of one already written too.
      await new Promise((r) => setTimeout(r, 1500));
      const twice = await db.query(`SELECT request_id, created_at, status, error_code, channel_id, total_ms, queue_ms, jsonb_array_length(attempts) AS tries FROM request_log
        WHERE token_id = $1 AND request_id IN (SELECT request_id FROM request_log WHERE token_id = $1 GROUP BY 1 HAVING count(*) > 1) ORDER BY 1 LIMIT 12`, [key.id]);
      expect(twice.rows, 'requests with more than one row').toEqual([]);
      const unseen = await missing(ids);
      console.log(`[request log] ${unseen.length} of ${outcomes.left} clients that left have no row: they left before the gateway had their request`);
      for (const id of unseen) expect(stack.gateway.logs.some((l) => l.reqId === id), `${id} reached the gateway`).toBe(false);
      const used = async () => (await stack.adminData('GET', `/api/token/${key.id}`)).used_quota;
      await expect.poll(used, { timeout: 10_000 }).toBe((await counted()).quota);
      const totals = await counted();
      console.log(`[request log] rows ${JSON.stringify(totals)}`);
      expect(totals.ids).toBe(totals.rows);
      expect(totals.rows).toBe(N - unseen.length);
      expect(totals.failovers).toBeGreaterThan(0);
      expect(totals.cancelled).toBeGreaterThan(0);
      expect(totals.streamed).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
  }, 180_000);
});
