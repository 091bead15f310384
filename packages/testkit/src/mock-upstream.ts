/**
 * What every mock upstream shares, so a provider's mock is its wire format only: a real HTTP
 * server on a free port, the body read (at most `MAX_BODY_BYTES`), what it received, the
 * failure modes a test scripts (a status with the provider's error body, a body that is no JSON,
 * a Retry-After, a delay, no answer at all, a reset connection, a concurrency limit answered 429),
 * streams paced and broken after some events (`sendEvents`), the requests in flight, the ones
 * answered, failed on purpose or left by their client, and `waitFor`. A provider's mock (`mock-openai-upstream.ts`,
 * `mock-anthropic-upstream.ts`, `mock-azure-upstream.ts`) gives a `MockWireFormat`: what the real
 * service refuses before anything else (a path, a key, a version), its error body, and its answer.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a mock does with a request, whatever its wire format. Unset fields: a quick, correct answer. */
export interface MockBehaviour {
  /** Answer this non-2xx status with the provider's error body (or `body`). */
  status?: number;
  /** Body of a failure; defaults to the provider's error body for the status. */
  body?: unknown;
  /** Body of a failure sent as it is (an HTML error page, say), instead of JSON. */
  rawBody?: string;
  /** Answer 200 with this JSON body instead of the provider's answer (an error inside a 200, say). */
  okBody?: unknown;
  /** Retry-After (seconds) sent with a failure. */
  retryAfter?: number;
  /** Wait this long before answering (before the headers of a stream). */
  delayMs?: number;
  /** Never answer; the request stays open until the client goes away. */
  hang?: boolean;
  /** Reset the connection instead of answering (counted as failed, not as a client that left). */
  reset?: boolean;
}

/** A request as it arrived. */
export interface ReceivedRequest {
  method: string;
  /** The path with its query, as sent. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body's bytes as text, as they came (a body passed through is compared byte for byte). */
  raw: string;
  /** The body parsed as JSON; undefined when it is not JSON (the request is then refused 400). */
  json: Record<string, unknown> | undefined;
  at: number;
}

/** One exchange the wire format answers: the request, the reply, and a signal for a client that left. */
export interface MockExchange {
  request: ReceivedRequest;
  res: ServerResponse;
  /** Aborted when the client goes away. */
  gone: AbortSignal;
  /** A JSON failure with the provider's headers (and `headers`). */
  fail(status: number, body: unknown, retryAfter?: number, headers?: Record<string, string>): void;
  /** Drops the connection on purpose (a stream lost mid-way): counted as failed, not as aborted. */
  breakConnection(): void;
}

/** How `sendEvents` sends a stream: a pause between events, and a break after some. */
export interface MockPacing {
  /** Wait this long between two events. */
  intervalMs?: number;
  /** Break the connection (`breakConnection`) after this many events; null or unset: never. */
  breakAfterEvents?: number | null;
}

/** Where a mock listens, and how much it remembers. */
export interface MockUpstreamOptions {
  /** Default: a free one. */
  port?: number;
  /** The most requests kept in `requests`, the oldest dropped first (a benchmark's mock runs long). Default: all. */
  keep?: number;
}

/** A refusal the real service makes before it serves anything (bad route, key or version). */
export interface MockRefusal {
  status: number;
  body: unknown;
  /** Headers beside the provider's own (AWS names its error type in `x-amzn-ErrorType`). */
  headers?: Record<string, string>;
}

export type MockCheck = MockRefusal | 'answered-outside' | undefined;

/** What a provider's mock says: the only part that differs between mocks. */
export interface MockWireFormat<B extends MockBehaviour, R> {
  /** Named in a `waitFor` that runs out of time. */
  name: string;
  /** What a test reads of each request, in the mock's own terms. */
  record(request: ReceivedRequest): R;
  /** Headers of every answer (Anthropic's `request-id`). */
  headers?(request: ReceivedRequest): Record<string, string>;
  /** The error body of a request whose body is not JSON. */
  invalidJson(request: ReceivedRequest): unknown;
  /**
   * What the real service refuses first (a path, a key, a signature, a version); or
   * `answered-outside`, a request answered outside behaviours and counters (`answerOutside`).
   */
  check(request: ReceivedRequest): MockCheck | Promise<MockCheck>;
  /** For `check`'s `answered-outside`, and for a request `servedBeside` the API: answers it whole. */
  answerOutside?(exchange: MockExchange): void;
  /**
   * A request the service answers beside its API, before its body is read as JSON and outside
   * behaviours and counters (an OAuth token endpoint, whose body is a form), by `answerOutside`.
   */
  servedBeside?(request: ReceivedRequest): boolean;
  /** The error body of a scripted failure's status, and of a 429 past the concurrency limit. */
  failureBody(status: number, request: ReceivedRequest): unknown;
  overLimitBody(request: ReceivedRequest): unknown;
  /** The provider's answer to a request no behaviour failed. */
  answer(exchange: MockExchange, behaviour: B): Promise<void>;
}

export interface MockUpstream<B extends MockBehaviour, R> {
  url: string;
  /** Every request received, in order, in the mock's own terms. */
  readonly requests: R[];
  /** Requests being answered right now. */
  readonly inFlight: number;
  /** The most requests ever in flight at once. */
  readonly maxInFlight: number;
  /** Requests whose client went away before the answer was complete. */
  readonly aborted: number;
  /** Requests refused with 429 because more than the limit were in flight. */
  readonly overLimit: number;
  /** Every request that arrived, whatever became of it (`requests` may keep fewer). */
  readonly arrived: number;
  /** Answers (2xx) sent whole. */
  readonly completed: number;
  /** Requests failed on purpose: a scripted failure status, a reset, a stream broken mid-way. */
  readonly failed: number;
  /**
   * Requests in flight on average, from the first request taken to the last one ended: how full
   * a concurrency limit was kept (32 of 32 means no slot ever idled while work waited).
   */
  readonly meanInFlight: number;
  /** The behaviour of every request not scripted with `next`. */
  setBehaviour(behaviour: B): void;
  /** Scripts the next requests, one behaviour each, before the default applies again. */
  next(...behaviours: B[]): void;
  /**
   * Answers 429 to requests past `limit` in flight; 0 lifts the limit. With a Retry-After of
   * `retryAfter` seconds, or none when null (a provider that says when in its error body).
   */
  limitConcurrency(limit: number, retryAfter?: number | null): void;
  /** Forgets requests, counters, script and behaviour. */
  reset(): void;
  /** Resolves when `predicate` holds, polling; rejects after `timeoutMs`. */
  waitFor(predicate: (mock: this) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The largest body a mock reads; past it the request fails (a mock never holds a flood). */
export const MAX_BODY_BYTES = 20 * 1024 * 1024;

/** Waits `ms`, or less when `signal` aborts first. */
export const sleepUnlessGone = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });

/** Writes `text`; as a real server, waits for a slow reader to take it (TCP backpressure). */
export async function writeOrWait(res: ServerResponse, text: string): Promise<void> {
  if (res.write(text)) return;
  await new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large');
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * Writes a stream's events as `pacing` says, waiting for a slow reader. Before a planned break
 * each event is waited for until it has left, or the break would eat it. False when the stream
 * broke on purpose or the client left: the caller then writes nothing more.
 */
export async function sendEvents({ res, gone, breakConnection }: MockExchange, events: Iterable<string>, pacing: MockPacing = {}): Promise<boolean> {
  const { intervalMs = 0, breakAfterEvents } = pacing;
  let sent = 0;
  for (const event of events) {
    if (sent > 0 && intervalMs > 0) await sleepUnlessGone(intervalMs, gone);
    if (gone.aborted) return false;
    if (breakAfterEvents != null && sent >= breakAfterEvents) {
      breakConnection();
      return false;
    }
    if (breakAfterEvents != null) await new Promise<void>((resolve) => res.write(event, () => resolve()));
    else await writeOrWait(res, event);
    sent++;
  }
  return !gone.aborted;
}

function parseObject(raw: string): Record<string, unknown> | undefined {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts a mock upstream of `format` on 127.0.0.1 and a free port. */
export async function startMockUpstream<B extends MockBehaviour, R>(format: MockWireFormat<B, R>, initial: B, options: MockUpstreamOptions = {}): Promise<MockUpstream<B, R>> {
  const keep = options.keep ?? Number.POSITIVE_INFINITY;
  let behaviour: B = { ...initial };
  let script: B[] = [];
  let requests: R[] = [];
  const counts = new InFlightCounts();
  let aborted = 0;
  let overLimit = 0;
  let arrived = 0;
  let completed = 0;
  let failed = 0;
  let concurrencyLimit = 0;
  let limitRetryAfter: number | null = 1;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    arrived++;
    const gone = new AbortController();
    // Answered by the wire format (not refused, not failed on purpose), and broken on purpose.
    let served = false;
    let broken = false;
    res.on('close', () => {
      if (res.writableFinished) {
        if (served && res.statusCode < 300) completed++;
      } else if (!broken) aborted++;
      gone.abort();
    });
    const raw = await readBody(req);
    const request: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, json: parseObject(raw), at: Date.now() };
    const fail = (status: number, body: unknown, retryAfter?: number, extra?: Record<string, string>) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...format.headers?.(request), ...extra };
      if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
      res.writeHead(status, headers).end(JSON.stringify(body));
    };
    const breakConnection = () => {
      if (broken) return;
      broken = true;
      failed++;
      res.destroy();
    };
    const exchange: MockExchange = { request, res, gone: gone.signal, fail, breakConnection };
    if (format.servedBeside?.(request)) return format.answerOutside?.(exchange);
    if (request.json === undefined) return fail(400, format.invalidJson(request));
    requests.push(format.record(request));
    if (requests.length > keep) requests.shift();
    const refusal = await format.check(request);
    if (refusal === 'answered-outside') return format.answerOutside?.(exchange);
    if (refusal) return fail(refusal.status, refusal.body, undefined, refusal.headers);
    if (concurrencyLimit > 0 && counts.inFlight >= concurrencyLimit) {
      overLimit++;
      return fail(429, format.overLimitBody(request), limitRetryAfter ?? undefined);
    }
    const b = script.length > 0 ? script.shift()! : behaviour;
    counts.change(1);
    try {
      if (b.hang) return await new Promise<void>((resolve) => gone.signal.addEventListener('abort', () => resolve(), { once: true }));
      await sleepUnlessGone(b.delayMs ?? 0, gone.signal);
      if (gone.signal.aborted) return;
      if (b.reset) return breakConnection();
      if (b.status !== undefined && (b.status < 200 || b.status >= 300)) {
        failed++;
        if (b.rawBody !== undefined) return void res.writeHead(b.status, { 'content-type': 'text/html' }).end(b.rawBody);
        return fail(b.status, b.body ?? format.failureBody(b.status, request), b.retryAfter);
      }
      served = true;
      if (b.okBody !== undefined) return void res.writeHead(200, { 'content-type': 'application/json', ...format.headers?.(request) }).end(JSON.stringify(b.okBody));
      await format.answer(exchange, b);
    } finally {
      counts.change(-1);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;

  const mock: MockUpstream<B, R> = {
    url: `http://127.0.0.1:${port}`,
    get requests() { return requests; },
    get inFlight() { return counts.inFlight; },
    get maxInFlight() { return counts.maxInFlight; },
    get aborted() { return aborted; },
    get overLimit() { return overLimit; },
    get meanInFlight() { return counts.mean; },
    get arrived() { return arrived; },
    get completed() { return completed; },
    get failed() { return failed; },
    setBehaviour(next) { behaviour = { ...next }; },
    next(...behaviours) { script.push(...behaviours); },
    limitConcurrency(limit, retryAfter: number | null = 1) { concurrencyLimit = limit; limitRetryAfter = retryAfter; },
    reset() {
      behaviour = {} as B;
      script = [];
      requests = [];
      counts.reset();
      aborted = 0;
      overLimit = 0;
      arrived = completed = failed = 0;
      concurrencyLimit = 0;
    },
    async waitFor(predicate, timeoutMs = 5000) {
      const started = Date.now();
      while (!predicate(mock)) {
        if (Date.now() - started > timeoutMs) throw new Error(`${format.name}: condition not met within ${timeoutMs} ms`);
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

/** Requests in flight: now, at most, and on average over the time since the first. */
class InFlightCounts {
  inFlight = 0;
  maxInFlight = 0;
  // The integral of inFlight over time, and the span it covers.
  private inFlightMs = 0;
  private firstTakenAt = 0;
  private lastChangeAt = 0;

  change(by: number): void {
    const now = performance.now();
    if (this.firstTakenAt === 0) this.firstTakenAt = this.lastChangeAt = now;
    this.inFlightMs += this.inFlight * (now - this.lastChangeAt);
    this.lastChangeAt = now;
    this.inFlight += by;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
  }

  get mean(): number {
    return this.lastChangeAt > this.firstTakenAt ? this.inFlightMs / (this.lastChangeAt - this.firstTakenAt) : 0;
  }

  reset(): void {
    this.maxInFlight = this.inFlight;
    this.inFlightMs = this.firstTakenAt = this.lastChangeAt = 0;
  }
}
