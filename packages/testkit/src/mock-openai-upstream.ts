import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { planChat, planCompletion, planEmbeddings, type ReplyOptions } from './mock-openai-replies.ts';
import { speak } from './mock-openai-speech.ts';
import { answerResponses } from './mock-openai-responses.ts';
import type { SpeechFormat } from '@gateway/contracts';

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
  /** A chat reply calls this tool (when the request offers tools) instead of answering in text, or the one a function of the request decides. */
  toolCall?: ReplyOptions['toolCall'];
  /** Words (a token each) as the request's output limit allows, this many without one (`ReplyOptions.wordsWithoutLimit`). */
  wordsWithoutLimit?: number;
  /** Leave `usage` out of the reply (and the stream's usage chunk). */
  omitUsage?: boolean;
  /** A stream's usage chunk comes this long after its last text chunk. */
  usageDelayMs?: number;
  /** Fields added to the reply's `usage` (and a stream's usage chunk), as `prompt_tokens_details` an upstream reports. */
  usageFields?: Record<string, unknown>;
  /** Embeddings in this format whatever `encoding_format` asked, as a server that ignores the field. */
  embeddingFormat?: 'float' | 'base64';
  /** Speech in this format (and its Content-Type) whatever `response_format` asked, as an upstream that ignores the field. */
  speechFormat?: SpeechFormat;
  /** Speech answered with this Content-Type, whatever format the audio is in. */
  speechContentType?: string;
  /** Embeddings whose JSON is padded to at least this many bytes (a reply past the gateway's limit). */
  embeddingPadBytes?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** The body's bytes as they came (a body passed through is compared byte for byte). */
  raw: string;
  at: number;
  /** What a Responses reply sent back: its JSON, or its stream's text (`event:`/`data:` blocks). */
  reply?: string;
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

/** The operations it speaks. */
const SERVED = new Set(['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/audio/speech', '/v1/responses']);

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
 * A real HTTP server speaking the OpenAI wire format (`POST /v1/completions`,
 * `/v1/chat/completions` and `/v1/responses`, whole or streamed with usage, `/v1/embeddings` and `/v1/audio/speech`), which a test can make slow, fail, rate-limit or hang, and
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
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization, body, raw, at: Date.now() };
    requests.push(record);
    const path = req.url ?? '';
    if (req.method !== 'POST' || !SERVED.has(path)) {
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
      await answer(res, record, b, gone.signal);
    } finally {
      changeInFlight(-1);
    }
  };

  const answer = async (res: ServerResponse, record: RecordedRequest, b: MockOpenAIBehaviour, gone: AbortSignal) => {
    const { path, body } = record;
    if (path === '/v1/audio/speech') return speak(res, body, gone, { format: b.speechFormat, contentType: b.speechContentType });
    if (path === '/v1/responses') {
      record.reply = await answerResponses(res, body, { text: typeof b.text === 'string' ? b.text : undefined, usageFields: b.usageFields, chunkDelayMs: b.chunkDelayMs }, gone);
      return;
    }
    const plan = path === '/v1/chat/completions' ? planChat(body, b) : path === '/v1/embeddings' ? planEmbeddings(body, b) : planCompletion(body, b);
    // The whole reply and the usage chunk share the plan's usage object.
    if (b.usageFields) Object.assign(plan.usage as Record<string, unknown>, b.usageFields);
    if (body.stream !== true || path === '/v1/embeddings') {
      const reply = { ...plan.whole };
      if (b.omitUsage) delete reply.usage;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      return;
    }
    const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true && !b.omitUsage;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sent = 0;
    // As a real server: a client that reads slowly slows the stream down (TCP backpressure).
    const send = async (chunk: unknown) => {
      sent++;
      if (res.write(`data: ${JSON.stringify(chunk)}\n\n`)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    };
    for (const chunk of plan.chunks) {
      if (gone.aborted) return;
      if (b.breakAfterChunks !== undefined && sent >= b.breakAfterChunks) {
        res.socket?.destroy();
        return;
      }
      await send(includeUsage ? { ...chunk, usage: null } : chunk);
      if (b.chunkDelayMs) await sleep(b.chunkDelayMs, gone);
    }
    if (includeUsage) {
      if (b.usageDelayMs) await sleep(b.usageDelayMs, gone);
      if (gone.aborted) return;
      await send(plan.usageChunk);
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
