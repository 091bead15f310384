/**
 * The OpenAI Files API end to end (issue 19): real gateway processes on a private PostgreSQL,
 * driven by the official `openai` SDK. Uploads stream into rows line by line (a 50 MB upload
 * leaves the gateway's memory flat), content streams back from the rows, a key sees only its
 * user's files, and a batch's output and error files are read from its lines.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import pg from 'pg';
import { Redis } from 'ioredis';
import { createBatchResultFiles, createDatabase, lineResultId } from '@gateway/database';
import { keys } from '@gateway/store';
import type { ServiceProcess, Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

// The stack's gateway keeps the real limits (200 MB, 50,000 lines); a second gateway on the same
// stores has small ones, for the refusals.
const SMALL = { FILE_MAX_BYTES: String(64 * 1024), FILE_MAX_LINES: '10' };

const it = stackTest({ database: true })
  .extend('small', { scope: 'file' }, async ({ stack }, { onCleanup }) => {
    const gateway = await stack.add('gateway', SMALL);
    onCleanup(() => void gateway.stop('SIGKILL'));
    return gateway;
  });

let seq = 0;
const clientAt = (url: string, key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 });

/** A user of its own with a key, so what one test uploads is not in another's list. */
async function tenant(stack: Stack, url = stack.gateway.url) {
  const user = await stack.adminData('POST', '/api/user/', { username: `f${++seq}`, password: 'files-password' });
  const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { userId: user.id as number, openai: clientAt(url, key), key: key as string };
}

const jsonl = (lines: unknown[]) => lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
const request = (i: number) => ({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model: 'm', prompt: `prompt ${i}` } });
const upload = async (openai: OpenAI, text: string | Buffer, name = 'in.jsonl') =>
  openai.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

/** The process's resident and peak resident memory (kB), from /proc. */
function memoryOf(service: ServiceProcess): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${service.child.pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)![1]);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

describe('the Files API', () => {
  it('stores an upload and answers it back: create, retrieve, list, content, delete', async ({ stack }) => {
    const { openai } = await tenant(stack);
    const text = jsonl([request(1), request(2), { custom_id: 'ü-€-😀', method: 'POST', url: '/v1/completions', body: { prompt: 'ünïcödé' } }]);
    const file = await upload(openai, text);
    expect(file).toMatchObject({ object: 'file', bytes: Buffer.byteLength(text), filename: 'in.jsonl', purpose: 'batch', status: 'processed' });
    expect(file.id).toMatch(/^file-/);
    expect(file.created_at).toBeGreaterThan(Date.now() / 1000 - 60);

    expect(await openai.files.retrieve(file.id)).toEqual(file);
    const content = await openai.files.content(file.id);
    expect(content.headers.get('content-type')).toMatch(/application\/(octet-stream|jsonl)/);
    expect(await content.text()).toBe(text);

    const listed = await openai.files.list();
    expect(listed.data).toEqual([file]);

    expect(await openai.files.delete(file.id)).toEqual({ id: file.id, object: 'file', deleted: true });
    expect(await refusal(openai.files.retrieve(file.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refusal(openai.files.content(file.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await refusal(openai.files.delete(file.id))).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await openai.files.list()).data).toEqual([]);
  });

  it('numbers lines as in the file: CRLF ends and blank lines are not lines of their own, and no final newline is needed', async ({ stack }) => {
    const { openai } = await tenant(stack);
    const file = await upload(openai, `${JSON.stringify(request(1))}\r\n\r\n  \n${JSON.stringify(request(2))}`);
    expect(await (await openai.files.content(file.id)).text()).toBe(jsonl([request(1), request(2)]));
    // The bad line is named by its number in the file, blank lines counted.
    const error = await refusal(upload(openai, `${JSON.stringify(request(1))}\n\n[1,2]\n`));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error!.message).toContain('line 3');
  });

  it('lists a user\'s files in pages, newest first or oldest first, by purpose', async ({ stack }) => {
    const { openai } = await tenant(stack);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await upload(openai, jsonl([request(i)]), `f${i}.jsonl`));
    // Newest first: by created_at (seconds), then id, so the order of the ids is the list's own.
    const all = (await openai.files.list()).data;
    expect(all.map((f) => f.id).sort()).toEqual(made.map((f) => f.id).sort());
    const asc = (await openai.files.list({ order: 'asc' } as any)).data;
    expect(asc.map((f) => f.id)).toEqual(all.map((f) => f.id).reverse());

    const first = await stack.admin('GET', '/v1/files?limit=2', undefined, (openai as any).apiKey);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'list', first_id: all[0]!.id, last_id: all[1]!.id, has_more: true });
    // The SDK's pages follow `after` to the end.
    const paged = [];
    for await (const file of openai.files.list({ limit: 2 } as any)) paged.push(file.id);
    expect(paged).toEqual(all.map((f) => f.id));
    const last = await stack.admin('GET', `/v1/files?limit=2&after=${all[3]!.id}`, undefined, (openai as any).apiKey);
    expect(last.body).toMatchObject({ data: [{ id: all[4]!.id }], has_more: false });

    expect((await openai.files.list({ purpose: 'batch_output' })).data).toEqual([]);
    expect((await openai.files.list({ purpose: 'batch' })).data).toHaveLength(5);
    const bad = await stack.admin('GET', '/v1/files?limit=0', undefined, (openai as any).apiKey);
    expect(bad.status).toBe(400);
  });

  it('shows a key only its own user\'s files: another user\'s are 404, as OpenAI answers an unknown id', async ({ stack }) => {
    const owner = await tenant(stack);
    const other = await tenant(stack);
    const file = await upload(owner.openai, jsonl([request(1)]));
    for (const call of [() => other.openai.files.retrieve(file.id), () => other.openai.files.content(file.id), () => other.openai.files.delete(file.id)]) {
      const error = await refusal(call());
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error!.message).toContain(`No such File object: ${file.id}`);
    }
    expect((await other.openai.files.list()).data).toEqual([]);
    expect(await owner.openai.files.retrieve(file.id)).toEqual(file);
  });

  it('refuses a line that is not a JSON object, naming it, and keeps nothing of the file', async ({ stack }) => {
    const { openai } = await tenant(stack);
    for (const [bad, at] of [['{"custom_id": "x",', 2], ['[1]', 2], ['"text"', 2], ['null', 2]] as const) {
      const error = await refusal(upload(openai, `${JSON.stringify(request(1))}\n${bad}\n${JSON.stringify(request(3))}\n`));
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error!.message).toContain(`line ${at}`);
      expect(error!.param).toBe('file');
    }
    expect((await openai.files.list()).data).toEqual([]);
    const db = new pg.Client({ connectionString: stack.postgres!.url });
    await db.connect();
    const orphans = await db.query(`SELECT count(*)::int AS n FROM file_lines WHERE file_id NOT IN (SELECT id FROM files)`);
    await db.end();
    expect(orphans.rows[0].n).toBe(0);
  });

  it('refuses a purpose other than batch, naming purpose, and a form with no file', async ({ stack }) => {
    const { openai, key } = await tenant(stack);
    const error = await refusal(openai.files.create({ file: await toFile(Buffer.from(jsonl([request(1)])), 'in.jsonl'), purpose: 'fine-tune' }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error!.param).toBe('purpose');
    const form = new FormData();
    form.set('purpose', 'batch');
    const answer = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).error.param).toBe('file');
    // A form with purpose before the file is as good as the SDK's (file first).
    const first = new FormData();
    first.set('purpose', 'batch');
    first.set('file', new Blob([jsonl([request(1)])]), 'p.jsonl');
    const stored = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: first });
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ filename: 'p.jsonl', purpose: 'batch' });
    expect((await openai.files.list()).data).toHaveLength(1);
  });

  it('rolls back an upload whose form breaks off or goes wrong after the file began, and holds no connection after it', async ({ stack }) => {
    const { openai, key } = await tenant(stack);
    const db = new pg.Client({ connectionString: stack.postgres!.url });
    await db.connect();
    try {
      const body = jsonl(Array.from({ length: 2000 }, (_, i) => request(i)));
      // Too many fields after the file (the parser's limit is 8): refused, nothing kept.
      const crowded = new FormData();
      crowded.set('file', new Blob([body]), 'c.jsonl');
      for (let i = 0; i < 10; i++) crowded.set(`extra${i}`, 'x');
      crowded.set('purpose', 'batch');
      const answer = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: crowded, signal: AbortSignal.timeout(10_000) });
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      // A wrong purpose sent before the file is refused as well.
      const wrong = new FormData();
      wrong.set('purpose', 'assistants');
      wrong.set('file', new Blob([body]), 'w.jsonl');
      const refused = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: wrong });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as any).error.param).toBe('purpose');
      // A client that goes away halfway through its file.
      const boundary = 'cut-off-boundary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n`;
      const cut = new AbortController();
      const partial = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(head + body.slice(0, body.length / 2)));
          setTimeout(() => cut.abort(), 300);
        },
      });
      await fetch(`${stack.gateway.url}/v1/files`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body: partial, duplex: 'half', signal: cut.signal,
      } as RequestInit).catch(() => undefined);
      // Every upload's transaction ended: no connection left inside one, and no line kept.
      await expect.poll(async () => (await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' OR (state = 'active' AND query LIKE 'INSERT INTO file_lines%')`)).rows[0].n, { timeout: 10_000 }).toBe(0);
      expect((await openai.files.list()).data).toEqual([]);
      // And the gateway goes on.
      expect((await upload(openai, body)).bytes).toBe(Buffer.byteLength(body));
    } finally {
      await db.end();
    }
  });

  it('answers a form it cannot read with a 400 saying so, and keeps a name without control or format characters', async ({ stack }) => {
    const { key, openai } = await tenant(stack);
    const send = (body: string, contentType = 'multipart/form-data; boundary=XB') =>
      fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': contentType } });
    const purpose = '--XB\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n';
    const file = (name: string) => `--XB\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\n{"custom_id":"x1","method":"POST","url":"/v1/completions","body":{}}\n\r\n`;
    for (const [what, answer] of [
      ['cut off before its last boundary', await send(purpose + file('a.jsonl'))],
      ['no boundary', await send('x', 'multipart/form-data')],
      ['two files', await send(purpose + file('a.jsonl') + file('b.jsonl') + '--XB--\r\n')],
    ] as const) {
      expect(answer.status, what).toBe(400);
      expect(((await answer.json()) as { error: { type: string; param: string } }).error, what).toMatchObject({ type: 'invalid_request_error', param: 'file' });
    }
    const named = await send(purpose + file('../x\u0001\u001b[31m\u202egpj.jsonl') + '--XB--\r\n');
    expect(named.status).toBe(200);
    const { id } = (await named.json()) as { id: string };
    expect((await openai.files.retrieve(id)).filename).toBe('x[31mgpj.jsonl');
  });

  it('refuses a compressed upload with a 415 saying to send it uncompressed, decided before it is read', async ({ stack }) => {
    const { key } = await tenant(stack);
    const boundary = 'gw-test-boundary';
    const multipart = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n{"custom_id":"a","method":"POST","url":"/v1/completions","body":{"model":"m","prompt":"x"}}\n\r\n--${boundary}--\r\n`);
    // A real upload in gzip, one that is not gzip, and a bomb (64 MiB inflated).
    // And a coding the gateway decodes nowhere: identity is still all it may send.
    for (const [what, body, coding] of [['gzip', gzipSync(multipart), 'gzip'], ['not gzip', multipart, 'gzip'], ['a bomb', gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '), { level: 9 }), 'gzip'], ['compress', multipart, 'compress']] as const) {
      const started = Date.now();
      const answer = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-encoding': coding } });
      expect(answer.status, what).toBe(415);
      expect(answer.headers.get('accept-encoding'), what).toBe('identity');
      expect(((await answer.json()) as { error: { message: string } }).error.message, what).toMatch(/upload .*send it uncompressed/);
      expect(Date.now() - started, what).toBeLessThan(5000);
    }
    // Uncompressed, the same upload is taken.
    const plain = await fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', body: multipart, headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` } });
    expect(plain.status).toBe(200);
    expect(stack.gateway.child.exitCode).toBeNull();
  });

  it('refuses a body that is not a multipart form from its headers, however it is encoded, holding none of it', async ({ stack }) => {
    const { key } = await tenant(stack);
    // 150 MB of JSON in 150 KB of gzip: it was inflated and parsed whole (RSS +600 MB, 1.5 GB for
    // four at once) before the handler refused it.
    const bomb = gzipSync(Buffer.from(`{"a":"${'x'.repeat(64 * 1024 * 1024)}"}`), { level: 9 });
    const before = memoryOf(stack.gateway).rss;
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => ({ body: bomb, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })),
      { body: Buffer.from('{"purpose":"batch"}'), headers: { 'content-type': 'application/json' } },
      { body: Buffer.from('purpose=batch'), headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    ].map(({ body, headers }) => fetch(`${stack.gateway.url}/v1/files`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, ...headers } })
      .then(async (answer) => ({ status: answer.status, error: ((await answer.json()) as { error: { message: string; param: string } }).error }))));
    for (const answer of answers) expect(answer).toMatchObject({ status: 400, error: { message: expect.stringMatching(/multipart\/form-data/), param: 'file' } });
    expect(memoryOf(stack.gateway).rss - before, 'gateway RSS, kB').toBeLessThan(50 * 1024);
  });

  it("lets one user hold at most two uploads at once (429 past them), and slow uploads hold no connection: other tenants' file requests are answered at once", async ({ stack }) => {
    // Five users sending slowly, two uploads each: more than the gateway's 8 upload connections,
    // which four such users took whole while their uploads were written as they came.
    const slows = await Promise.all(Array.from({ length: 5 }, () => tenant(stack)));
    const other = await tenant(stack);
    // Uploads that send their first line and then a byte every half second.
    const boundary = 'slow-boundary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${JSON.stringify(request(1))}\n`;
    const stop = new AbortController();
    const trickle = (key: string) => fetch(`${stack.gateway.url}/v1/files`, {
      method: 'POST', duplex: 'half', signal: stop.signal,
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(head));
          const timer = setInterval(() => controller.enqueue(new TextEncoder().encode(' ')), 500);
          stop.signal.addEventListener('abort', () => clearInterval(timer));
        },
      }),
    } as RequestInit).then((answer) => answer.status, () => 0);
    const held = slows.flatMap((slow) => Array.from({ length: 12 }, () => trickle(slow.key)));
    try {
      // Ten of each user's twelve are refused at once; two trickle on.
      await expect.poll(async () => (await Promise.all(held.map((h) => Promise.race([h, new Promise((r) => setTimeout(() => r('pending'), 50))])))).filter((s) => s === 429).length, { timeout: 10_000 }).toBe(50);
      // Meanwhile another tenant lists and uploads at once (it waited 5 s for a connection, then 503).
      const started = Date.now();
      expect((await other.openai.files.list()).data).toEqual([]);
      expect((await upload(other.openai, jsonl([request(2)]))).status).toBe('processed');
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      stop.abort();
      await Promise.all(held);
    }
  });

  it('refuses a file past FILE_MAX_LINES (400) or FILE_MAX_BYTES (413), keeping nothing, and the gateway goes on', async ({ stack, small }) => {
    const { openai } = await tenant(stack, small.url);
    const ten = await upload(openai, jsonl(Array.from({ length: 10 }, (_, i) => request(i))));
    expect(ten.bytes).toBeGreaterThan(0);
    const lines = await refusal(upload(openai, jsonl(Array.from({ length: 11 }, (_, i) => request(i)))));
    expect(lines).toBeInstanceOf(OpenAI.BadRequestError);
    expect(lines!.message).toContain('10 lines');
    // Few lines but past 64 kB: long lines, cut off mid-line by the size limit.
    const big = jsonl(Array.from({ length: 5 }, (_, i) => ({ ...request(i), pad: 'x'.repeat(20_000) })));
    const bytes = await refusal(upload(openai, big));
    expect(bytes?.status).toBe(413);
    expect(bytes!.message).toContain(String(64 * 1024));
    // Exactly at the limit is allowed.
    const exact = `{"pad":"${'y'.repeat(64 * 1024 - 11)}"}\n`;
    expect(Buffer.byteLength(exact)).toBe(64 * 1024);
    expect((await upload(openai, exact)).bytes).toBe(64 * 1024);
    expect((await openai.files.list()).data.map((f) => f.bytes).sort()).toEqual([ten.bytes, 64 * 1024].sort());
  });

  it('refuses a line larger than one request may be (BODY_LIMIT_BYTES, 413 naming the line), in bytes, not characters', async ({ stack }) => {
    const strict = await stack.add('gateway', { BODY_LIMIT_BYTES: String(16 * 1024) });
    try {
      const { openai } = await tenant(stack, strict.url);
      const line = (pad: string) => JSON.stringify({ ...request(1), pad });
      const atLimit = line('a'.repeat(16 * 1024 - line('').length));
      expect(Buffer.byteLength(atLimit)).toBe(16 * 1024);
      const kept = await upload(openai, jsonl([request(0), atLimit]));
      expect(kept.bytes).toBeGreaterThan(16 * 1024);
      // Past it by one byte; and 6,000 characters of three bytes each (18,000 bytes), fewer
      // characters than the limit; and one line that never ends, sent in pieces.
      for (const [text, lineNumber] of [
        [jsonl([request(0), line('a'.repeat(16 * 1024 - line('').length + 1))]), 2],
        [jsonl([line('€'.repeat(6000))]), 1],
        [`${JSON.stringify(request(0))}\n\n{"pad":"${'z'.repeat(60 * 1024)}`, 3],
      ] as const) {
        const refused = await refusal(upload(openai, text));
        expect(refused?.status).toBe(413);
        expect(refused!.message).toContain(`line ${lineNumber} of the file is larger than ${16 * 1024} bytes`);
      }
      expect((await openai.files.list()).data.map((f) => f.id)).toEqual([kept.id]);
    } finally {
      await strict.stop('SIGKILL');
    }
  });

  it('streams a 50 MB upload into PostgreSQL and back out with a 96 MB heap, the gateway\'s memory flat', async ({ stack }) => {
    // Left to itself V8 lets its old generation grow well past what is live before it collects
    // it (the stack's gateway: +50 to +90 MB of RSS over a 50 MB upload and read, +133 MB over
    // 200 MB; live heap after each collection ~45 MB). A gateway with a 96 MB heap shows what the
    // upload really holds: a file held whole (as text, or as bytes) would not fit, or would show
    // in its RSS.
    const lean = await stack.add('gateway', { NODE_OPTIONS: '--max-old-space-size=96' });
    try {
      const { openai } = await tenant(stack, lean.url);
      // 50 MB in 5,000 lines of 10 kB.
      const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ ...request(i), body: { model: 'm', prompt: `${i} `.padEnd(10_000 - 90, 'z') } }));
      const text = lines.join('\n') + '\n';
      const size = Buffer.byteLength(text);
      expect(size).toBeGreaterThan(49_000_000);
      // Warmed first (its connections, the multipart parser, the compiled code), so what grows is the upload's.
      const warm = await upload(openai, lines.slice(0, 200).join('\n'));
      await (await openai.files.content(warm.id)).text();
      const before = memoryOf(lean);
      let peak = before.rss;
      const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(lean).rss)), 20);
      try {
        const started = Date.now();
        const file = await upload(openai, text, 'big.jsonl');
        const uploadMs = Date.now() - started;
        const uploadPeak = peak;
        expect(file.bytes).toBe(size);
        const read = Date.now();
        const content = await openai.files.content(file.id);
        const hash = createHash('sha256');
        let received = 0;
        for await (const chunk of content.body as unknown as AsyncIterable<Uint8Array>) {
          hash.update(chunk);
          received += chunk.length;
        }
        const readMs = Date.now() - read;
        expect(received).toBe(size);
        expect(hash.digest('hex')).toBe(createHash('sha256').update(text).digest('hex'));
        const after = memoryOf(lean);
        const mb = (kb: number) => (kb / 1024).toFixed(0);
        console.log(`[files] ${(size / 1e6).toFixed(1)} MB in 5,000 lines: upload ${uploadMs} ms, content ${readMs} ms; gateway RSS before ${mb(before.rss)} MB, ` +
          `peak during the upload ${mb(uploadPeak)} MB, during the content ${mb(peak)} MB, after ${mb(after.rss)} MB; VmHWM ${mb(before.hwm)} → ${mb(after.hwm)} MB`);
        // Flat: the gateway grew by less than the file's size (it never held it): +14 to +24 MB
        // alone, +34 and +45 MB with the whole suite loading both cores (collections come later);
        // through the spool on disk (line-spool.ts, read 64 KiB at a time), +27 to +33 MB alone.
        // A gateway that held the file as text would have died in its 96 MB heap long before this
        // line; one that held it as bytes (outside the heap) would show the 50 MB and its garbage.
        expect((peak - before.rss) * 1024).toBeLessThan(size);
        await openai.files.delete(file.id);
      } finally {
        clearInterval(sampler);
      }
    } finally {
      await lean.stop('SIGKILL');
    }
  });

  it('serves a batch\'s output and error files from its lines, in OpenAI\'s line format, `bytes` exact', async ({ stack }) => {
    const { openai, userId } = await tenant(stack);
    const db = createDatabase(stack.postgres!.url);
    try {
      const batchId = `batch_${'ab'.repeat(12)}${++seq}`;
      await db.query(
        `INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, created_at, expires_at)
         VALUES ($1, $2, 0, '/v1/completions', 'file-x', '24h', 'finalizing', 0, 0)`, [batchId, userId]);
      const body = (text: string) => JSON.stringify({ id: 'cmpl-1', object: 'text_completion', choices: [{ text, index: 0 }] });
      const rows: [number, string, number, number | null, string | null, string | null, unknown][] = [
        [1, 'ok-1', 2, 200, 'req-a', body('first ü'), null],
        [2, 'bad-2', 2, 400, 'req-b', JSON.stringify({ error: { message: 'no', type: 'invalid_request_error' } }), { code: 'invalid_request', message: 'no' }],
        [3, 'lost-3', 2, null, null, null, { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' }],
        [4, 'ok-4', 2, 201, 'req-d', body('fourth'), null],
        [5, 'open-5', 1, null, null, null, null],
      ];
      for (const [line, customId, state, status, requestId, response, error] of rows) {
        await db.query(
          `INSERT INTO batch_lines (batch_id, line_no, custom_id, body, state, status_code, request_id, response, error) VALUES ($1, $2, $3, '{}', $4, $5, $6, $7, $8)`,
          [batchId, line, customId, state, status, requestId, response, error === null ? null : JSON.stringify(error)]);
      }
      const made = await createBatchResultFiles(db, batchId, userId);
      expect(made.outputFileId).toMatch(/^file-/);
      expect(made.errorFileId).toMatch(/^file-/);
      // Made once: asked again (a batch worker after a takeover), the same files.
      expect(await createBatchResultFiles(db, batchId, userId)).toEqual(made);

      const output = await openai.files.retrieve(made.outputFileId!);
      expect(output).toMatchObject({ purpose: 'batch_output', filename: `${batchId}_output.jsonl` });
      const outputText = await (await openai.files.content(output.id)).text();
      expect(Buffer.byteLength(outputText)).toBe(output.bytes);
      expect(outputText.split('\n').slice(0, -1).map((l) => JSON.parse(l))).toEqual([
        { id: lineResultId(batchId, 1), custom_id: 'ok-1', response: { status_code: 200, request_id: 'req-a', body: JSON.parse(body('first ü')) }, error: null },
        { id: lineResultId(batchId, 4), custom_id: 'ok-4', response: { status_code: 201, request_id: 'req-d', body: JSON.parse(body('fourth')) }, error: null },
      ]);

      const errors = await openai.files.retrieve(made.errorFileId!);
      expect(errors).toMatchObject({ purpose: 'batch_output', filename: `${batchId}_error.jsonl` });
      const errorText = await (await openai.files.content(errors.id)).text();
      expect(Buffer.byteLength(errorText)).toBe(errors.bytes);
      expect(errorText.split('\n').slice(0, -1).map((l) => JSON.parse(l))).toEqual([
        { id: lineResultId(batchId, 2), custom_id: 'bad-2', response: { status_code: 400, request_id: 'req-b', body: { error: { message: 'no', type: 'invalid_request_error' } } }, error: { code: 'invalid_request', message: 'no' } },
        { id: lineResultId(batchId, 3), custom_id: 'lost-3', response: null, error: { code: 'batch_expired', message: 'This request could not be executed before the completion window expired.' } },
      ]);
      // Listed with the user's files, and not another user's.
      expect((await openai.files.list({ purpose: 'batch_output' })).data.map((f) => f.id).sort()).toEqual([output.id, errors.id].sort());
      const other = await tenant(stack);
      expect(await refusal(other.openai.files.content(output.id))).toBeInstanceOf(OpenAI.NotFoundError);

      // A batch with only successes has no error file.
      const clean = `batch_${'cd'.repeat(12)}${seq}`;
      await db.query(`INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, created_at, expires_at)
                      VALUES ($1, $2, 0, '/v1/completions', 'file-x', '24h', 'finalizing', 0, 0)`, [clean, userId]);
      await db.query(`INSERT INTO batch_lines (batch_id, line_no, custom_id, body, state, status_code, request_id, response) VALUES ($1, 1, 'a', '{}', 2, 200, 'r', '{}')`, [clean]);
      expect(await createBatchResultFiles(db, clean, userId)).toEqual({ outputFileId: expect.stringMatching(/^file-/), errorFileId: null });
    } finally {
      await db.end();
    }
  });

  it('answers 503 while PostgreSQL is away, and serves again once it is back', async ({ stack }) => {
    const { openai } = await tenant(stack);
    const file = await upload(openai, jsonl([request(1)]));
    await stack.postgres!.stop();
    try {
      const error = await refusal(openai.files.retrieve(file.id));
      expect(error?.status).toBe(503);
      expect(error!.headers?.get('retry-after')).toBe('5');
      const refused = await refusal(upload(openai, jsonl([request(2)])));
      expect(refused?.status).toBe(503);
      // A new user's id is taken above every id PostgreSQL has rows of: unknown, no user is made.
      expect((await stack.admin('POST', '/api/user/', { username: `f${++seq}`, password: 'files-password' })).status).toBe(503);
    } finally {
      await stack.postgres!.restart();
    }
    await expect.poll(() => openai.files.retrieve(file.id).then((f) => f.id, () => 'unavailable'), { timeout: 15_000 }).toBe(file.id);
  });

  it("removes a deleted user's uploads and ended batches with their result files, and cancels its running batch", async ({ stack }) => {
    const gone = await tenant(stack);
    const stays = await tenant(stack);
    await upload(gone.openai, jsonl([request(1)]));
    await upload(gone.openai, jsonl([request(2)]));
    const kept = await upload(stays.openai, jsonl([request(3)]));
    const db = createDatabase(stack.postgres!.url);
    try {
      const batch = async (userId: number, status: string) => {
        const id = `batch_${'cd'.repeat(12)}${++seq}`;
        await db.query(
          `INSERT INTO batches (id, user_id, token_id, endpoint, input_file_id, completion_window, status, created_at, expires_at)
           VALUES ($1, $2, 0, '/v1/completions', 'file-x', '24h', $3, 0, 0)`, [id, userId, status]);
        await db.query(`INSERT INTO batch_lines (batch_id, line_no, custom_id, body, state, status_code, response) VALUES ($1, 1, 'a', '{}', 2, 200, '{}')`, [id]);
        return id;
      };
      const ended = await batch(gone.userId, 'completed');
      await createBatchResultFiles(db, ended, gone.userId);
      const running = await batch(gone.userId, 'in_progress');
      const othersBatch = await batch(stays.userId, 'completed');
      const count = async (sql: string, id: number | string) => Number((await db.query(sql, [id])).rows[0].n);
      expect(await count('SELECT count(*) AS n FROM files WHERE user_id = $1', gone.userId)).toBe(3);

      await stack.adminData('DELETE', `/api/user/${gone.userId}`);
      // Its uploads and the ended batch's output file, the batch and its lines: gone.
      expect(await count('SELECT count(*) AS n FROM files WHERE user_id = $1', gone.userId)).toBe(0);
      expect(await count('SELECT count(*) AS n FROM batches WHERE id = $1', ended)).toBe(0);
      expect(await count('SELECT count(*) AS n FROM batch_lines WHERE batch_id = $1', ended)).toBe(0);
      // The running one is cancelled, to end as its batch worker sees it.
      expect((await db.query('SELECT status FROM batches WHERE id = $1', [running])).rows[0].status).toBe('cancelling');
      // Another user's: untouched.
      expect(await count('SELECT count(*) AS n FROM batches WHERE id = $1', othersBatch)).toBe(1);
      expect((await stays.openai.files.retrieve(kept.id)).id).toBe(kept.id);
    } finally {
      await db.end();
    }
  });

  it("removes a deleted user's files when the DELETE is sent again, if PostgreSQL was away the first time", async ({ stack }) => {
    const gone = await tenant(stack);
    await upload(gone.openai, jsonl([request(1)]));
    await stack.postgres!.stop();
    try {
      // The user is deleted; its files cannot be removed now (said in the gateway's log).
      await stack.adminData('DELETE', `/api/user/${gone.userId}`);
    } finally {
      await stack.postgres!.restart();
    }
    const db = createDatabase(stack.postgres!.url);
    try {
      const files = async () => Number((await db.query('SELECT count(*) AS n FROM files WHERE user_id = $1', [gone.userId])).rows[0].n);
      await expect.poll(() => files().catch(() => -1), { timeout: 15_000 }).toBe(1);
      // Sent again: no such user (404), and what it left is removed.
      expect((await stack.admin('DELETE', `/api/user/${gone.userId}`)).status).toBe(404);
      expect(await files()).toBe(0);
    } finally {
      await db.end();
    }
  });

  it("keeps no file its user was deleted while it was sent", async ({ stack }) => {
    const gone = await tenant(stack);
    const boundary = 'deleted-boundary';
    let send!: ReadableStreamDefaultController<Uint8Array>;
    const answer = fetch(`${stack.gateway.url}/v1/files`, {
      method: 'POST', duplex: 'half',
      headers: { authorization: `Bearer ${gone.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: new ReadableStream({ start: (controller) => { send = controller; } }),
    } as RequestInit);
    const bytes = (text: string) => send.enqueue(new TextEncoder().encode(text));
    bytes(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${JSON.stringify(request(1))}\n`);
    // A window for the gateway to take the key and begin the upload: nothing outside it shows that.
    await new Promise((r) => setTimeout(r, 300));
    await stack.adminData('DELETE', `/api/user/${gone.userId}`);
    bytes(`${JSON.stringify(request(2))}\n\r\n--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--${boundary}--\r\n`);
    send.close();
    const refused = await answer;
    expect(refused.status, await refused.clone().text()).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/deleted or disabled while the file was sent/);
    const db = createDatabase(stack.postgres!.url);
    try {
      expect(Number((await db.query('SELECT count(*) AS n FROM files WHERE user_id = $1', [gone.userId])).rows[0].n)).toBe(0);
    } finally {
      await db.end();
    }
  });

  it("never numbers a new user as a gone one whose files PostgreSQL still holds (Redis restored from an older copy)", async ({ stack }) => {
    const gone = await tenant(stack);
    const file = await upload(gone.openai, jsonl([request(1)]));
    // Redis as an older copy left it: its user sequence from before the gone user was made (the
    // copy has no record of it either; here the new user's would be written over it).
    const redis = new Redis(stack.redis.url);
    try {
      await redis.set(keys.userSeq, gone.userId - 1);
    } finally {
      redis.disconnect();
    }
    const next = await tenant(stack);
    expect(next.userId).toBeGreaterThan(gone.userId);
    expect((await next.openai.files.list()).data).toEqual([]);
    expect(await refusal(next.openai.files.retrieve(file.id))).toBeInstanceOf(OpenAI.NotFoundError);
  });
});
