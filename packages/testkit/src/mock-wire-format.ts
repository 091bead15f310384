/**
 * What a provider's mock gives the shared base (`mock-upstream.ts`): the request as it arrived,
 * the exchange it answers, the behaviours a test scripts, and the wire format itself (what the
 * real service refuses first, its error bodies, its answer).
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';

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
  /** A JSON failure with the provider's headers. */
  fail(status: number, body: unknown, retryAfter?: number, headers?: Record<string, string>): void;
  /** Drops the connection on purpose (a stream lost mid-way): counted as failed, not as aborted. */
  breakConnection(): void;
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
