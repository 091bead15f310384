/**
 * Reads of files and batches that one tenant may make large (issue 40): downloads and batch
 * validation hold a page of a file at a time (a line larger than a page comes in parts), a
 * download waits for its client, one user has a few reads at once (429 past them), a list of
 * batches is bounded in bytes, and blank lines count towards a file's lines. Real gateway and
 * batch-worker processes on a private PostgreSQL; memory is their RSS from /proc.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { createBatchResultFiles, lineResultId } from '@gateway/database';
import type { ServiceProcess, Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ database: true, workers: ['batch-worker'] });

let seq = 0;
const MB = 1024 * 1024;

async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `r${++seq}`, password: 'reads-password' });
  const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { userId: user.id as number, key: key as string, openai: new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 }) };
}

const rssMb = (service: ServiceProcess) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${service.child.pid}/status`, 'utf8'))![1]) / 1024;

/** Samples `service`'s RSS every 50 ms until `stop` is called; `stop` resolves with the peak. */
function sampleRss(service: ServiceProcess): () => number {
  let peak = rssMb(service);
  const timer = setInterval(() => (peak = Math.max(peak, rssMb(service))), 50);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssMb(service));
  };
}

interface StoredFile { id: string; bytes: number; md5: string }

/**
 * A file of the user's written straight into PostgreSQL (an upload of hundreds of MB would take
 * most of the test): `lines` lines of about `lineBytes` bytes each, each a batch request whose
 * prompt is hex text that differs from line to line; or a copy of `like`'s lines.
 */
async function storedFile(db: pg.Pool, userId: number, lines: number, lineBytes: number, like?: StoredFile): Promise<StoredFile> {
  const id = `file-reads${++seq}${'0'.repeat(16)}`;
  await db.query(`INSERT INTO files (id, user_id, purpose, filename, bytes, line_count, created_at) VALUES ($1, $2, 'batch', 'big.jsonl', $3, $4, 0)`, [id, userId, like?.bytes ?? 0, lines]);
  if (like) {
    await db.query(`INSERT INTO file_lines (file_id, line_no, content) SELECT $1, line_no, content FROM file_lines WHERE file_id = $2`, [id, like.id]);
    return { ...like, id };
  }
  await db.query(
    `INSERT INTO file_lines (file_id, line_no, content)
     SELECT $1, g, '{"custom_id":"c' || g || '","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"'
       || repeat(md5(g::text), $3 / 32) || '"}]}}'
     FROM generate_series(1, $2) g`, [id, lines, lineBytes]);
  const { rows } = await db.query<{ bytes: string; md5: string }>(
    `UPDATE files SET bytes = (SELECT sum(octet_length(content) + 1) FROM file_lines WHERE file_id = $1) WHERE id = $1
     RETURNING bytes, (SELECT md5(string_agg(content || E'\\n', '' ORDER BY line_no)) FROM file_lines WHERE file_id = $1) AS md5`, [id]);
  return { id, bytes: Number(rows[0]!.bytes), md5: rows[0]!.md5 };
}

/** A download that reads `bytesPerTick` every 100 ms (a slow client); `done` resolves with what it read and its md5. */
function slowDownload(stack: Stack, key: string, fileId: string, bytesPerTick: number) {
  let response: IncomingMessage | undefined;
  let stopped = false;
  const request = get(`${stack.gateway.url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });
  const done = new Promise<{ status: number; bytes: number; md5: string; body: string }>((resolve, reject) => {
    // Stopped by the test before its answer came: settled as nothing read.
    request.on('error', (error) => (stopped ? resolve({ status: 0, bytes: 0, md5: '', body: '' }) : response ? undefined : reject(error)));
    request.on('response', (answer) => {
      response = answer;
      const hash = createHash('md5');
      let bytes = 0;
      let body = '';
      const take = (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
        if (answer.statusCode !== 200) body += chunk.toString();
        return chunk.length;
      };
      let timer: NodeJS.Timeout | undefined;
      if (bytesPerTick === Infinity) answer.on('data', take);
      else {
        answer.pause();
        timer = setInterval(() => {
          for (let budget = bytesPerTick, chunk: Buffer | null; budget > 0 && (chunk = answer.read() as Buffer | null);) budget -= take(chunk);
        }, 100);
      }
      answer.on('end', () => {
        clearInterval(timer);
        resolve({ status: answer.statusCode!, bytes, md5: hash.digest('hex'), body });
      });
      // Stopped before its end: settled with what it read.
      answer.on('close', () => {
        clearInterval(timer);
        resolve({ status: answer.statusCode!, bytes, md5: '', body });
      });
      answer.on('error', () => {});
    });
  });
  const answered = new Promise<number>((resolve) => request.on('response', (answer) => resolve(answer.statusCode!)));
  return { done, answered, stop: () => { stopped = true; request.destroy(); response?.destroy(); } };
}

/** Percentile `p` (0 to 1) of `values`. */
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))]!;

/** Times of another tenant's file list, one after another, until `until` settles. */
async function latencies(openai: OpenAI, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const times: number[] = [];
  while (!done) {
    const started = performance.now();
    await openai.files.list();
    times.push(performance.now() - started);
  }
  return times;
}

describe('reads of large files', () => {
  for (const [shape, lines, lineBytes] of [['12 lines of 10 MB', 12, 10 * MB], ['one line of 60 MB', 1, 60 * MB], ['50,000 lines of 2 KB', 50_000, 2048]] as const) {
    it(`holds a page per slow download of a file of ${shape}, never a line whole: 8 at once leave the gateway's RSS bounded`, async ({ stack }) => {
      const db = new pg.Pool({ connectionString: stack.postgres!.url, max: 2 });
      try {
        // Four users, two downloads each (the most a user may have at once).
        const users = await Promise.all(Array.from({ length: 4 }, () => tenant(stack)));
        let made = Date.now();
        const first = await storedFile(db, users[0]!.userId, lines, lineBytes);
        const files = [first, ...(await Promise.all(users.slice(1).map((user) => storedFile(db, user.userId, lines, lineBytes, first))))];
        console.log(`[file reads] 4 files of ${shape} stored in ${Date.now() - made} ms`);
        made = Date.now();
        const before = rssMb(stack.gateway);
        const peak = sampleRss(stack.gateway);
        const slow = users.flatMap((user, i) => [0, 1].map(() => slowDownload(stack, user.key, files[i]!.id, 64 * 1024)));
        // 6 s of slow reading, 640 KB a second each: a page is read when its download starts and
        // whenever one is used up, so a page held whole shows within the first seconds.
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        const during = peak();
        for (const download of slow) download.stop();
        await Promise.all(slow.map((d) => d.done.catch(() => undefined)));
        // Then four read their files whole at full speed, byte for byte as stored, while another
        // tenant lists its files (4 such downloads took its p99 from 58 to 811 ms).
        const other = await tenant(stack);
        // 2 s of the other tenant's latencies alone: the baseline's span.
        const baseline = await latencies(other.openai, new Promise((resolve) => setTimeout(resolve, 2000)));
        made = Date.now();
        const fast = Promise.all(users.map((user, i) => slowDownload(stack, user.key, files[i]!.id, Infinity).done));
        const others = await latencies(other.openai, fast);
        for (const [i, read] of (await fast).entries()) expect(read).toMatchObject({ status: 200, bytes: files[i]!.bytes, md5: files[i]!.md5 });
        const after = rssMb(stack.gateway);
        console.log(`[file reads] 8 slow downloads of ${(files[0]!.bytes / 1e6).toFixed(0)} MB (${shape}): gateway RSS ${before.toFixed(0)} → peak ${during.toFixed(0)} MB, ` +
          `${after.toFixed(0)} MB after 4 fast ones (${Date.now() - made} ms), during which another tenant's p50/p99 ${percentile(others, 0.5).toFixed(0)}/${percentile(others, 0.99).toFixed(0)} ms ` +
          `(alone ${percentile(baseline, 0.5).toFixed(0)}/${percentile(baseline, 0.99).toFixed(0)} ms)`);
        // Pages of 10 lines of 10 MB held 100 MB and more per download (295 MB → 4.2 GB for 8).
        expect(during - before, `RSS ${before.toFixed(0)} → ${during.toFixed(0)} MB`).toBeLessThan(150);
      } finally {
        await db.end();
      }
    }, 300_000);
  }

  it('lets one user read two contents at once: a third is a 429 with Retry-After in OpenAI\'s format, and its place comes back when one ends', async ({ stack }) => {
    const db = new pg.Pool({ connectionString: stack.postgres!.url, max: 2 });
    try {
      const user = await tenant(stack);
      // Larger than the socket's buffers, which take a few MB of a download at once.
      const file = await storedFile(db, user.userId, 4, 10 * MB);
      const other = await storedFile(db, user.userId, 2, 1024);
      const held = [slowDownload(stack, user.key, file.id, 1024), slowDownload(stack, user.key, file.id, 1024)];
      expect(await Promise.all(held.map((h) => h.answered))).toEqual([200, 200]);
      await expect.poll(async () => (await fetch(`${stack.gateway.url}/v1/files/${other.id}/content`, { headers: { authorization: `Bearer ${user.key}` } })).status, { timeout: 10_000 }).toBe(429);
      // The same for another of its files, through the SDK.
      const refused = await user.openai.files.content(other.id).then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
      expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
      expect(refused!.headers?.get('retry-after')).toBe('1');
      expect(refused!.error).toMatchObject({ type: expect.any(String), message: expect.stringContaining('2 downloads') });
      // Another user reads at once.
      const stranger = await tenant(stack);
      const own = await storedFile(db, stranger.userId, 2, 1024);
      expect((await (await stranger.openai.files.content(own.id)).text()).length).toBe(own.bytes);
      // A client that leaves gives its place back.
      held[0]!.stop();
      await expect.poll(async () => (await fetch(`${stack.gateway.url}/v1/files/${other.id}/content`, { headers: { authorization: `Bearer ${user.key}` } })).status, { timeout: 10_000 }).toBe(200);
      held[1]!.stop();
    } finally {
      await db.end();
    }
  }, 120_000);

  it('serves a line and an answer larger than a part byte for byte, multi-byte characters cut between parts included', async ({ stack }) => {
    const db = new pg.Pool({ connectionString: stack.postgres!.url, max: 2 });
    try {
      const user = await tenant(stack);
      const wide = (n: number) => JSON.stringify({ text: 'ü€😀'.repeat(n) + 'x' });
      // An upload of a small line, a 3 MB line of 2-, 3- and 4-byte characters, a small line.
      const fileId = `file-wide${++seq}${'0'.repeat(16)}`;
      const lines = ['{"a":1}', wide(350_000), '{"b":"é"}'];
      await db.query(`INSERT INTO files (id, user_id, purpose, filename, bytes, line_count, created_at) VALUES ($1, $2, 'batch', 'w.jsonl', 0, 3, 0)`, [fileId, user.userId]);
      for (const [i, content] of lines.entries()) await db.query(`INSERT INTO file_lines (file_id, line_no, content) VALUES ($1, $2, $3)`, [fileId, i + 1, content]);
      expect(await (await user.openai.files.content(fileId)).text()).toBe(lines.map((l) => l + '\n').join(''));

      // A batch whose second answer is 3 MB: its output file, and its size, exact. Written as
      // completed, so the batch worker beside it takes no part (a finalizing one it ended itself,
      // making the file of the lines inserted so far).
      const batchId = `batch_${'cd'.repeat(12)}${++seq}`;
      await db.query(
        `INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, created_at, expires_at)
         VALUES ($1, $2, 0, '/v1/completions', $3, '24h', 'completed', 0, 0)`, [batchId, user.userId, fileId]);
      const bodies = [wide(1), wide(350_000), wide(2)];
      for (const [i, body] of bodies.entries()) {
        await db.query(`INSERT INTO batch_lines (batch_id, line_no, custom_id, body, state, status_code, request_id, response) VALUES ($1, $2, $3, '{}', 2, 200, 'req', $4)`,
          [batchId, i + 1, `c${i + 1}`, body]);
      }
      const made = await createBatchResultFiles(db, batchId, user.userId);
      const expected = bodies.map((body, i) =>
        `{"id":${JSON.stringify(lineResultId(batchId, i + 1))},"custom_id":"c${i + 1}","response":{"status_code":200,"request_id":"req","body":${body}},"error":null}\n`).join('');
      expect(await (await user.openai.files.content(made.outputFileId!)).text()).toBe(expected);
      expect((await user.openai.files.retrieve(made.outputFileId!)).bytes).toBe(Buffer.byteLength(expected));
    } finally {
      await db.end();
    }
  }, 120_000);

  it('validates a batch of 10 MB lines a line at a time: the batch worker\'s RSS stays bounded', async ({ stack }) => {
    const db = new pg.Pool({ connectionString: stack.postgres!.url, max: 2 });
    try {
      const user = await tenant(stack);
      const file = await storedFile(db, user.userId, 20, 10 * MB);
      const worker = stack.services.find((s) => s.name === 'batch-worker')!;
      const before = rssMb(worker);
      const peak = sampleRss(worker);
      // The key may not use model "m": every line is read, checked and named, and the batch fails.
      const { key } = await stack.adminData('POST', '/api/token/', { name: 'k2', user_id: user.userId, unlimited_quota: true, models: ['other'] });
      const openai = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
      const batch = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      await expect.poll(async () => (await openai.batches.retrieve(batch.id)).status, { timeout: 120_000, interval: 500 }).toBe('failed');
      const during = peak();
      const failed = await openai.batches.retrieve(batch.id);
      expect(failed.errors?.data, JSON.stringify(failed.errors?.data?.[0])).toHaveLength(20);
      expect(failed.errors?.data?.[19]).toMatchObject({ code: 'model_not_allowed', line: 20 });
      console.log(`[file reads] validating 20 lines of 10 MB: batch worker RSS ${before.toFixed(0)} → peak ${during.toFixed(0)} MB`);
      // Pages of 1,000 lines held the whole 200 MB file, and its parsed copies (123 → 948 MB).
      expect(during - before, `RSS ${before.toFixed(0)} → ${during.toFixed(0)} MB`).toBeLessThan(200);
    } finally {
      await db.end();
    }
  }, 300_000);
});

describe('lists of batches', () => {
  it('answers a page of at most 256 KiB, each batch naming 10 of its errors, cut short with has_more: the SDK still gets every batch', async ({ stack }) => {
    const db = new pg.Pool({ connectionString: stack.postgres!.url, max: 2 });
    try {
      const user = await tenant(stack);
      const mark = ++seq;
      // 100 failed batches of 1,000 named errors (21 MB in all), and 100 with the largest metadata.
      await db.query(
        `INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, errors, metadata, created_at, expires_at, failed_at)
         SELECT 'batch_' || $2 || '_' || lpad(b::text, 4, '0'), $1, 0, '/v1/chat/completions', 'file-x', '24h', 'failed',
           CASE WHEN b <= 100 THEN (SELECT jsonb_agg(jsonb_build_object('code', 'invalid_request', 'message', 'line ' || l || ': ' || repeat('bad ', 45), 'param', 'body.messages', 'line', l)) FROM generate_series(1, 1000) l) END,
           CASE WHEN b > 100 THEN (SELECT jsonb_object_agg(lpad(k::text, 64, 'k'), repeat('v', 512)) FROM generate_series(1, 16) k) END,
           1000 + b, 0, 1000 + b
         FROM generate_series(1, 200) b`, [user.userId, mark]);
      const all = Array.from({ length: 200 }, (_, i) => `batch_${mark}_${String(200 - i).padStart(4, '0')}`);

      const answer = await fetch(`${stack.gateway.url}/v1/batches?limit=100`, { headers: { authorization: `Bearer ${user.key}` } });
      const text = await answer.text();
      const page = JSON.parse(text);
      console.log(`[file reads] GET /v1/batches?limit=100 of batches with the largest metadata: ${page.data.length} batches, ${text.length} bytes`);
      expect(text.length).toBeLessThan(300 * 1024);
      expect(page).toMatchObject({ object: 'list', has_more: true, first_id: all[0] });
      expect(page.data.length).toBeGreaterThan(0);
      expect(page.data.length).toBeLessThan(100);
      expect(page.last_id).toBe(all[page.data.length - 1]);

      const errorsPage = await fetch(`${stack.gateway.url}/v1/batches?limit=100&after=${all[99]}`, { headers: { authorization: `Bearer ${user.key}` } });
      const errorsText = await errorsPage.text();
      const errorsBody = JSON.parse(errorsText);
      console.log(`[file reads] GET /v1/batches?limit=100 of batches of 1,000 errors: ${errorsBody.data.length} batches, ${errorsText.length} bytes`);
      expect(errorsText.length).toBeLessThan(300 * 1024);
      expect(errorsBody.has_more).toBe(true);
      for (const batch of errorsBody.data) expect(batch.errors.data).toHaveLength(10);
      expect(errorsBody.data[0].errors.data[9]).toMatchObject({ code: 'invalid_request', line: 10 });

      // The SDK's pages follow has_more and after to the last batch, in order, each once.
      const listed = [];
      for await (const batch of user.openai.batches.list({ limit: 100 })) listed.push(batch.id);
      expect(listed).toEqual(all);
      // One batch read alone names all its errors.
      expect((await user.openai.batches.retrieve(all[150]!)).errors?.data).toHaveLength(1000);

      // 30 lists at once by one user: 4 at a time run, the others are refused (429, Retry-After);
      // another tenant's requests meanwhile (21 MB answers took its p99 from 57 ms to 2.2 s).
      const other = await tenant(stack);
      // 2 s of the other tenant's latencies alone: the baseline's span.
      const baseline = await latencies(other.openai, new Promise((resolve) => setTimeout(resolve, 2000)));
      const lists = Promise.all(Array.from({ length: 30 }, () =>
        fetch(`${stack.gateway.url}/v1/batches?limit=100&after=${all[99]}`, { headers: { authorization: `Bearer ${user.key}` } })
          .then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() }))));
      const during = await latencies(other.openai, lists);
      const answers = await lists;
      const refused = answers.filter((a) => a.status === 429);
      console.log(`[file reads] 30 lists at once: ${30 - refused.length} answered, ${refused.length} refused; another tenant's p50/p99 ${percentile(during, 0.5).toFixed(0)}/${percentile(during, 0.99).toFixed(0)} ms (alone ${percentile(baseline, 0.5).toFixed(0)}/${percentile(baseline, 0.99).toFixed(0)} ms)`);
      expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused[0]).toMatchObject({ retryAfter: '1', body: { error: { type: expect.any(String), message: expect.stringContaining('4 reads of batches') } } });
    } finally {
      await db.end();
    }
  }, 120_000);
});

describe('blank lines', () => {
  it('counts blank lines towards FILE_MAX_LINES: one line and 200,000 blank ones is refused at once', async ({ stack }) => {
    const user = await tenant(stack);
    const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [] } });
    // At the limit (50,000 lines, 49,999 of them blank), kept; one more blank line, refused.
    const at = await user.openai.files.create({ file: await toFile(Buffer.from(line + '\n'.repeat(50_000)), 'blank.jsonl'), purpose: 'batch' });
    expect(at.status).toBe('processed');
    for (const blank of ['\n', '\r\n', '  \t\n']) {
      const started = Date.now();
      const refused = await user.openai.files.create({ file: await toFile(Buffer.from(line + '\n' + blank.repeat(200_000)), 'blank.jsonl'), purpose: 'batch' })
        .then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
      expect(refused, JSON.stringify(blank)).toBeInstanceOf(OpenAI.BadRequestError);
      expect(refused!.message).toContain('more than 50000 lines, blank lines included');
      console.log(`[file reads] 1 line and 200,000 blank lines of ${JSON.stringify(blank)}: 400 in ${Date.now() - started} ms`);
    }
    expect((await user.openai.files.list()).data.map((f) => f.id)).toEqual([at.id]);
  }, 60_000);
});
