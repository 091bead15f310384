import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the mock does with a request. Unset fields fall back to a quick, correct answer. */
export interface MockOpenAIBehaviour {
  /** Answer this non-2xx status with an OpenAI error body (or `body`). */
  status?: number;
  /** Body of a failure; defaults to an OpenAI error body. */
  body?: unknown;
  /** Body of a failure sent as it is (an HTML error page, say), instead of JSON. */
  rawBody?: string;
  /** A stream whose first event never ends: data without a blank line, until the caller leaves. */
  endlessEvent?: boolean;
  /** Answer 200 with this JSON body instead of a completion (an `{error}` inside a 200, say). */
  okBody?: unknown;
  /** Retry-After (seconds) sent with a failure. */
  retryAfter?: number;
  /** Wait this long before answering (before the headers of a stream). */
  delayMs?: number;
  /** Never answer; the request stays open until the client goes away. */
  hang?: boolean;
  /** A stream waits this long between chunks. */
  chunkDelayMs?: number;
  /** A stream breaks its connection after sending this many chunks. */
  breakAfterChunks?: number;
  /** The completion text, or a function of the prompt (split into one chunk per word when streamed). */
  text?: string | ((prompt: string) => string);
  /** Leave `usage` out of the reply (and the stream's usage chunk). */
  omitUsage?: boolean;
  /** A stream's usage chunk comes this long after its last text chunk. */
  usageDelayMs?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
  at: number;
}

export interface MockOpenAIUpstream {
  url: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Requests being answered right now. */
  readonly inFlight: number;
  /** The most requests ever in flight at once. */
  readonly maxInFlight: number;
  /** Requests whose client went away before the answer was complete. */
  readonly aborted: number;
  /** Requests refused with 429 because more than the limit were in flight. */
  readonly overLimit: number;
  /**
   * Requests in flight on average, from the first request taken to the last one ended: how full
   * a concurrency limit was kept (32 of 32 means no slot ever idled while work waited).
   */
  readonly meanInFlight: number;
  /** The behaviour of every request not scripted with `next`. */
  setBehaviour(behaviour: MockOpenAIBehaviour): void;
  /** Scripts the next requests, one behaviour each, before the default applies again. */
  next(...behaviours: MockOpenAIBehaviour[]): void;
  /** Answers 429 (with Retry-After) to requests past `limit` in flight; 0 lifts the limit. */
  limitConcurrency(limit: number, retryAfter?: number): void;
  /** Forgets requests, counters, script and behaviour. */
  reset(): void;
  /** Resolves when `predicate` holds, polling; rejects after `timeoutMs`. */
  waitFor(predicate: (mock: MockOpenAIUpstream) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt)) return prompt.map((p) => (Array.isArray(p) ? p.join(' ') : String(p))).join(' ');
  return '';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });

/**
 * A real HTTP server speaking the OpenAI completions wire format (`POST /v1/completions`,
 * whole or streamed with usage), which a test can make slow, fail, rate-limit or hang, and
 * which counts what it saw.
 */
export async function startMockOpenAIUpstream(initial: MockOpenAIBehaviour = {}): Promise<MockOpenAIUpstream> {
  let behaviour: MockOpenAIBehaviour = { ...initial };
  let script: MockOpenAIBehaviour[] = [];
  let requests: RecordedRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  // The integral of inFlight over time, and the span it covers, for meanInFlight.
  let inFlightMs = 0;
  let firstTakenAt = 0;
  let lastChangeAt = 0;
  const changeInFlight = (by: number) => {
    const now = performance.now();
    if (firstTakenAt === 0) firstTakenAt = lastChangeAt = now;
    inFlightMs += inFlight * (now - lastChangeAt);
    lastChangeAt = now;
    inFlight += by;
  };
  let aborted = 0;
  let overLimit = 0;
  let concurrencyLimit = 0;
  let limitRetryAfter = 1;
  let sequence = 0;

  const fail = (res: ServerResponse, status: number, body: unknown, retryAfter?: number) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    res.writeHead(status, headers).end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
      gone.abort();
    });
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      return fail(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error', param: null, code: null } });
    }
    requests.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body, at: Date.now() });
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      return fail(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error', param: null, code: null } });
    }
    if (concurrencyLimit > 0 && inFlight >= concurrencyLimit) {
      overLimit++;
      return fail(res, 429, { error: { message: 'Rate limit reached: too many requests in flight', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, limitRetryAfter);
    }
    const b = script.length > 0 ? script.shift()! : behaviour;
    changeInFlight(1);
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      if (b.hang) {
        await new Promise<void>((resolve) => gone.signal.addEventListener('abort', () => resolve(), { once: true }));
        return;
      }
      await sleep(b.delayMs ?? 0, gone.signal);
      if (gone.signal.aborted) return;
      if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
        if (b.rawBody !== undefined) return void res.writeHead(b.status, { 'content-type': 'text/html' }).end(b.rawBody);
        return fail(res, b.status, b.body ?? { error: { message: `mock failure ${b.status}`, type: 'server_error', param: null, code: null } }, b.retryAfter);
      }
      if (b.okBody !== undefined) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(b.okBody));
      if (b.endlessEvent) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"text":"');
        const filler = 'x'.repeat(64 * 1024);
        while (!gone.signal.aborted) {
          if (!res.write(filler)) await new Promise<void>((resolve) => { res.once('drain', resolve); gone.signal.addEventListener('abort', () => resolve(), { once: true }); });
        }
        return;
      }
      await answer(res, body, b, gone.signal);
    } finally {
      changeInFlight(-1);
    }
  };

  const answer = async (res: ServerResponse, body: Record<string, unknown>, b: MockOpenAIBehaviour, gone: AbortSignal) => {
    const id = `cmpl-mock-${++sequence}`;
    const created = Math.floor(Date.now() / 1000);
    const model = String(body.model ?? '');
    const n = typeof body.n === 'number' ? body.n : 1;
    const prompt = promptText(body.prompt);
    const text = (typeof b.text === 'function' ? b.text(prompt) : b.text) ?? 'This is a mock completion.';
    const prefix = body.echo === true ? prompt : '';
    const usage = { prompt_tokens: words(prompt), completion_tokens: words(text) * n, total_tokens: words(prompt) + words(text) * n };
    const logprobs = typeof body.logprobs === 'number'
      ? { tokens: text.split(' '), token_logprobs: text.split(' ').map(() => -0.5), top_logprobs: null, text_offset: text.split(' ').map((_, i) => i) }
      : null;

    if (body.stream !== true) {
      const choices = Array.from({ length: n }, (_, index) => ({ text: prefix + text, index, logprobs, finish_reason: 'stop' }));
      const reply: Record<string, unknown> = { id, object: 'text_completion', created, model, choices };
      if (!b.omitUsage) reply.usage = usage;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      return;
    }

    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true && !b.omitUsage;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const pieces = text.split(' ').map((w, i) => (i === 0 ? prefix + w : ` ${w}`));
    let sent = 0;
    // As a real server: a client that reads slowly slows the stream down (TCP backpressure).
    const send = async (chunk: unknown) => {
      sent++;
      if (res.write(`data: ${JSON.stringify(chunk)}\n\n`)) return;
      await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    };
    for (let index = 0; index < n; index++) {
      for (const piece of pieces) {
        if (gone.aborted) return;
        if (b.breakAfterChunks !== undefined && sent >= b.breakAfterChunks) {
          res.socket?.destroy();
          return;
        }
        const chunk: Record<string, unknown> = { id, object: 'text_completion', created, model, choices: [{ text: piece, index, logprobs: null, finish_reason: null }] };
        if (includeUsage) chunk.usage = null;
        await send(chunk);
        if (b.chunkDelayMs) await sleep(b.chunkDelayMs, gone);
      }
      const last: Record<string, unknown> = { id, object: 'text_completion', created, model, choices: [{ text: '', index, logprobs: null, finish_reason: 'stop' }] };
      if (includeUsage) last.usage = null;
      await send(last);
    }
    if (includeUsage) {
      if (b.usageDelayMs) await sleep(b.usageDelayMs, gone);
      if (gone.aborted) return;
      await send({ id, object: 'text_completion', created, model, choices: [], usage });
    }
    res.end('data: [DONE]\n\n');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const mock: MockOpenAIUpstream = {
    url: `http://127.0.0.1:${port}`,
    get requests() { return requests; },
    get inFlight() { return inFlight; },
    get maxInFlight() { return maxInFlight; },
    get aborted() { return aborted; },
    get overLimit() { return overLimit; },
    get meanInFlight() { return lastChangeAt > firstTakenAt ? inFlightMs / (lastChangeAt - firstTakenAt) : 0; },
    setBehaviour(next) { behaviour = { ...next }; },
    next(...behaviours) { script.push(...behaviours); },
    limitConcurrency(limit, retryAfter = 1) { concurrencyLimit = limit; limitRetryAfter = retryAfter; },
    reset() {
      behaviour = {};
      script = [];
      requests = [];
      maxInFlight = inFlight;
      inFlightMs = firstTakenAt = lastChangeAt = 0;
      aborted = 0;
      overLimit = 0;
      concurrencyLimit = 0;
    },
    async waitFor(predicate, timeoutMs = 5000) {
      const started = Date.now();
      while (!predicate(mock)) {
        if (Date.now() - started > timeoutMs) throw new Error(`mock upstream: condition not met within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return mock;
}
