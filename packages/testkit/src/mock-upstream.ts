/**
 * What every mock upstream shares, so a provider's mock is its wire format only: a real HTTP
 * server on a free port, what it received, the counters and `waitFor`. Its pieces, each in its own
 * file: the wire format a provider's mock gives (`mock-wire-format.ts`), the body read
 * (`mock-request-body.ts`), one exchange and how it ended (`mock-exchange.ts`), the failure modes
 * and delays a test scripts (`mock-behaviour.ts`), streams paced and broken (`mock-stream-writing.ts`),
 * and the counts (`mock-counters.ts`). A provider's mock (`mock-openai-upstream.ts`,
 * `mock-anthropic-upstream.ts`, `mock-azure-upstream.ts`, …) gives a `MockWireFormat`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MockScript, playBehaviour } from './mock-behaviour.ts';
import { MockCounters } from './mock-counters.ts';
import { openExchange } from './mock-exchange.ts';
import type { MockBehaviour, MockWireFormat } from './mock-wire-format.ts';

export type { MockBehaviour, MockCheck, MockExchange, MockRefusal, MockWireFormat, ReceivedRequest } from './mock-wire-format.ts';
export { sendEvents, sleepUnlessGone, writeOrWait, type MockPacing } from './mock-stream-writing.ts';

/** Where a mock listens, and how much it remembers. */
export interface MockUpstreamOptions {
  /** Default: a free one. */
  port?: number;
  /** The most requests kept in `requests`, the oldest dropped first (a benchmark's mock runs long). Default: all. */
  keep?: number;
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

/** Starts a mock upstream of `format` on 127.0.0.1 and a free port. */
export async function startMockUpstream<B extends MockBehaviour, R>(format: MockWireFormat<B, R>, initial: B, options: MockUpstreamOptions = {}): Promise<MockUpstream<B, R>> {
  const keep = options.keep ?? Number.POSITIVE_INFINITY;
  const script = new MockScript(initial);
  const counters = new MockCounters();
  let requests: R[] = [];
  let concurrencyLimit = 0;
  let limitRetryAfter: number | null = 1;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    counters.arrived++;
    const exchange = await openExchange(req, res, counters, (request) => format.headers?.(request));
    const { request, fail } = exchange;
    if (format.servedBeside?.(request)) return format.answerOutside?.(exchange);
    if (request.json === undefined) return fail(400, format.invalidJson(request));
    requests.push(format.record(request));
    if (requests.length > keep) requests.shift();
    const refusal = await format.check(request);
    if (refusal === 'answered-outside') return format.answerOutside?.(exchange);
    if (refusal) return fail(refusal.status, refusal.body, undefined, refusal.headers);
    if (concurrencyLimit > 0 && counters.inFlight.inFlight >= concurrencyLimit) {
      counters.overLimit++;
      return fail(429, format.overLimitBody(request), limitRetryAfter ?? undefined);
    }
    await playBehaviour(exchange, script.take(), format, counters);
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
    get inFlight() { return counters.inFlight.inFlight; },
    get maxInFlight() { return counters.inFlight.maxInFlight; },
    get aborted() { return counters.aborted; },
    get overLimit() { return counters.overLimit; },
    get meanInFlight() { return counters.inFlight.mean; },
    get arrived() { return counters.arrived; },
    get completed() { return counters.completed; },
    get failed() { return counters.failed; },
    setBehaviour(next) { script.setDefault(next); },
    next(...behaviours) { script.push(...behaviours); },
    limitConcurrency(limit, retryAfter: number | null = 1) { concurrencyLimit = limit; limitRetryAfter = retryAfter; },
    reset() {
      script.reset();
      requests = [];
      counters.reset();
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
