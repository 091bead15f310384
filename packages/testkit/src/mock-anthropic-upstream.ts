/**
 * A real HTTP server speaking Anthropic's Messages API (`POST /v1/messages`, whole or streamed
 * as server-sent events, with tool use and extended thinking; `POST /v1/messages/count_tokens`), which a test can make slow, fail, rate-limit, hang or break mid-stream,
 * and which counts what it saw. It refuses what Anthropic refuses (`mock-anthropic-checks.ts`) and
 * answers as Anthropic does (`mock-anthropic-reply.ts`). Its options and counters are the OpenAI
 * mock's, so a test moves from one to the other without relearning.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { refusalOf } from './mock-anthropic-checks.ts';
import { MockPromptCache } from './mock-anthropic-cache.ts';
import { errorBody, errorTypeOf, planReply, requestText, streamEvents, tokens, wholeMessage, type MockToolUse } from './mock-anthropic-reply.ts';

/** What the mock does with a request. Unset fields fall back to a quick, correct answer. */
export interface MockAnthropicBehaviour {
  /** Answer this non-2xx status with Anthropic's error body for it (529: overloaded_error), or `body`. */
  status?: number;
  /** Body of a failure; defaults to Anthropic's error body. */
  body?: unknown;
  /** Answer 200 with this JSON body instead of a message (an error inside a 200, say). */
  okBody?: unknown;
  /** Retry-After (seconds) sent with a failure. */
  retryAfter?: number;
  /** Wait this long before answering (before the headers of a stream). */
  delayMs?: number;
  /** Never answer; the request stays open until the client goes away. */
  hang?: boolean;
  /** A stream waits this long after each event. */
  chunkDelayMs?: number;
  /** A stream breaks its connection after sending this many events. */
  breakAfterChunks?: number;
  /** A stream sends Anthropic's `error` event after this many events, then ends. */
  streamError?: { afterEvents: number; type?: string; message?: string };
  /** The reply text, or a function of the last user message's text (streamed a word at a time). */
  text?: string | ((prompt: string) => string);
  /**
   * Call this tool whatever the request says, or the tool a function of the request decides
   * (otherwise: when tools are given and the user asks about the weather).
   */
  toolUse?: MockToolUse | ((request: Record<string, unknown>) => MockToolUse | undefined);
  /**
   * Keep a prompt cache as Anthropic does (`MockPromptCache`): the prefix up to each
   * `cache_control` mark is written, and read by a later request to this mock that repeats it;
   * the usage reports both. Otherwise both are 0.
   */
  promptCache?: boolean;
  /**
   * Report this prompt cache use on every reply whatever its marks, as a provider that caches by
   * itself would (for a door that sets no marks); its counts come out of the prompt's.
   */
  cacheUse?: { read: number; written: number };
}

export interface MockAnthropicRequest {
  method: string;
  path: string;
  /** The `x-api-key` header. */
  apiKey: string | undefined;
  /** The `authorization` header (the 1.x SDKs send the key as a bearer token). */
  authorization: string | undefined;
  anthropicVersion: string | undefined;
  /** The `anthropic-beta` header, as it came. */
  anthropicBeta: string | undefined;
  body: Record<string, unknown>;
  /** The body's bytes as they came, for a test that checks blocks arrived byte for byte. */
  rawBody: string;
  at: number;
}

export interface MockAnthropicUpstream {
  url: string;
  /** Every request received, in order. */
  readonly requests: MockAnthropicRequest[];
  /** Requests being answered right now. */
  readonly inFlight: number;
  /** The most requests ever in flight at once. */
  readonly maxInFlight: number;
  /** Requests whose client went away before the answer was complete. */
  readonly aborted: number;
  /** Requests refused with 429 because more than the limit were in flight. */
  readonly overLimit: number;
  /** The behaviour of every request not scripted with `next`. */
  setBehaviour(behaviour: MockAnthropicBehaviour): void;
  /** Scripts the next requests, one behaviour each, before the default applies again. */
  next(...behaviours: MockAnthropicBehaviour[]): void;
  /** Answers 429 rate_limit_error (with Retry-After) to requests past `limit` in flight; 0 lifts the limit. */
  limitConcurrency(limit: number, retryAfter?: number): void;
  /** Forgets requests, counters, script and behaviour. */
  reset(): void;
  /** Resolves when `predicate` holds, polling; rejects after `timeoutMs`. */
  waitFor(predicate: (mock: MockAnthropicUpstream) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
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

export async function startMockAnthropicUpstream(initial: MockAnthropicBehaviour = {}): Promise<MockAnthropicUpstream> {
  let behaviour: MockAnthropicBehaviour = { ...initial };
  let script: MockAnthropicBehaviour[] = [];
  let requests: MockAnthropicRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let aborted = 0;
  let overLimit = 0;
  let concurrencyLimit = 0;
  let limitRetryAfter = 1;
  let sequence = 0;
  const promptCache = new MockPromptCache();

  const fail = (res: ServerResponse, requestId: string, status: number, body: unknown, retryAfter?: number) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'request-id': requestId };
    if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
    res.writeHead(status, headers).end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted++;
      gone.abort();
    });
    const n = ++sequence;
    const requestId = `req_mock_${n}`;
    const failWith = (status: number, type: string, message: string, retryAfter?: number) => fail(res, requestId, status, errorBody(type, message, requestId), retryAfter);
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      return failWith(400, 'invalid_request_error', 'The request body is not valid JSON.');
    }
    const header = (name: string) => (typeof req.headers[name] === 'string' ? (req.headers[name] as string) : undefined);
    requests.push({ method: req.method ?? '', path: req.url ?? '', apiKey: header('x-api-key'), authorization: header('authorization'), anthropicVersion: header('anthropic-version'), anthropicBeta: header('anthropic-beta'), body, rawBody: raw, at: Date.now() });
    if (req.method === 'POST' && req.url === '/v1/messages/count_tokens') {
      const refusal = refusalOf(req.headers, { max_tokens: 1, ...body });
      if (refusal) return failWith(refusal.status, refusal.type, refusal.message);
      return void res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId }).end(JSON.stringify({ input_tokens: tokens(requestText(body)) }));
    }
    if (req.method !== 'POST' || req.url !== '/v1/messages') return failWith(404, 'not_found_error', `Not found: ${req.method} ${req.url}`);
    const refusal = refusalOf(req.headers, body);
    if (refusal) return failWith(refusal.status, refusal.type, refusal.message);
    if (concurrencyLimit > 0 && inFlight >= concurrencyLimit) {
      overLimit++;
      return failWith(429, 'rate_limit_error', 'This request would exceed the rate limit for your organization. Please retry later.', limitRetryAfter);
    }
    const b = script.length > 0 ? script.shift()! : behaviour;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      if (b.hang) {
        await new Promise<void>((resolve) => gone.signal.addEventListener('abort', () => resolve(), { once: true }));
        return;
      }
      await sleep(b.delayMs ?? 0, gone.signal);
      if (gone.signal.aborted) return;
      if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
        const type = errorTypeOf(b.status);
        return fail(res, requestId, b.status, b.body ?? errorBody(type, b.status === 529 ? 'Overloaded' : `mock ${type}`, requestId), b.retryAfter);
      }
      if (b.okBody !== undefined) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(b.okBody));
      await answer(res, n, body, b, gone.signal);
    } finally {
      inFlight--;
    }
  };

  const answer = async (res: ServerResponse, n: number, body: Record<string, unknown>, b: MockAnthropicBehaviour, gone: AbortSignal) => {
    const cache = b.promptCache ? promptCache.use(body) : b.cacheUse;
    const plan = cache ? { ...planReply(body, b, n), cache } : planReply(body, b, n);
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_mock_${n}` }).end(JSON.stringify(wholeMessage(plan)));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_mock_${n}` });
    let sent = 0;
    // As a real server: a client that reads slowly slows the stream down (TCP backpressure).
    const send = async (event: Record<string, unknown>) => {
      sent++;
      if (res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`)) return;
      await new Promise<void>((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    };
    for (const event of streamEvents(plan)) {
      if (gone.aborted) return;
      if (b.breakAfterChunks !== undefined && sent >= b.breakAfterChunks) return void res.socket?.destroy();
      if (b.streamError && sent >= b.streamError.afterEvents) {
        const { type = 'overloaded_error', message = 'Overloaded' } = b.streamError;
        await send(errorBody(type, message));
        return void res.end();
      }
      await send(event);
      if (b.chunkDelayMs) await sleep(b.chunkDelayMs, gone);
    }
    res.end();
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

  const mock: MockAnthropicUpstream = {
    url: `http://127.0.0.1:${port}`,
    get requests() { return requests; },
    get inFlight() { return inFlight; },
    get maxInFlight() { return maxInFlight; },
    get aborted() { return aborted; },
    get overLimit() { return overLimit; },
    setBehaviour(next) { behaviour = { ...next }; },
    next(...behaviours) { script.push(...behaviours); },
    limitConcurrency(limit, retryAfter = 1) { concurrencyLimit = limit; limitRetryAfter = retryAfter; },
    reset() {
      behaviour = {};
      script = [];
      requests = [];
      maxInFlight = inFlight;
      aborted = 0;
      overLimit = 0;
      concurrencyLimit = 0;
      promptCache.clear();
    },
    async waitFor(predicate, timeoutMs = 5000) {
      const started = Date.now();
      while (!predicate(mock)) {
        if (Date.now() - started > timeoutMs) throw new Error(`mock Anthropic upstream: condition not met within ${timeoutMs} ms`);
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
