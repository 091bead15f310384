/**
 * How an upstream call failed, in terms a router can act on without knowing the provider:
 * an HTTP status the upstream answered, a time-out, a connection that could not be made or
 * broke, or a reply that did not follow the wire format. Every provider throws this.
 */
export type UpstreamFailureKind = 'http' | 'timeout' | 'connection' | 'protocol' | 'cancelled';

export interface UpstreamErrorOptions {
  kind: UpstreamFailureKind;
  message: string;
  /** The upstream's HTTP status, for `http`. */
  status?: number;
  /** Seconds, from the upstream's Retry-After. */
  retryAfter?: number;
  /** The upstream's error body, parsed when it was JSON. */
  body?: unknown;
  /**
   * The request's own doing, not the channel's: a reply past the gateway's size limits (what the
   * request asked for), a time-out at the request's own deadline rather than the channel's.
   * Another channel would fare no better, and the channel's health is left as it is.
   */
  ofTheRequest?: boolean;
  cause?: unknown;
}

/** How an upstream failure's message ends when its body was not JSON (never shown to clients). */
export const NOT_JSON_BODY = ' with a body that is not JSON';

export class UpstreamError extends Error {
  readonly kind: UpstreamFailureKind;
  readonly status: number;
  readonly retryAfter?: number;
  readonly body?: unknown;
  readonly ofTheRequest: boolean;

  constructor(options: UpstreamErrorOptions) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'UpstreamError';
    this.kind = options.kind;
    this.status = options.status ?? 0;
    this.retryAfter = options.retryAfter;
    this.body = options.body;
    this.ofTheRequest = options.ofTheRequest ?? false;
  }
}

/**
 * The catalogue of upstream failures, as errors.ts's constructors are of the client's errors:
 * each kind a provider or the router throws, by what happened.
 */
export const upstreamFailure = {
  /**
   * The reply, or a stream event, does not follow the wire format. `ofTheRequest`: the request's
   * own doing (a reply past the gateway's limits, which another channel would send as well).
   */
  protocol: (message: string, options: { cause?: unknown; ofTheRequest?: boolean } = {}) => new UpstreamError({ kind: 'protocol', message, ...options }),
  /** The upstream answered `status`, with its body and Retry-After. */
  http: (status: number, message: string, options: { body?: unknown; retryAfter?: number; cause?: unknown } = {}) =>
    new UpstreamError({ kind: 'http', status, message, ...options }),
  /** The channel's credential was refused, or cannot be used: a 401, which counts toward auto-disable. */
  credentialRefused: (message: string, options: { body?: unknown; retryAfter?: number; cause?: unknown } = {}) =>
    new UpstreamError({ kind: 'http', status: 401, message, ...options }),
  /** A request the upstream would refuse, refused before it is sent: the client's own 400. */
  badRequest: (message: string) => new UpstreamError({ kind: 'http', status: 400, message }),
  /** No connection could be made, or it broke (a stream that ended early included). */
  connection: (message: string, cause?: unknown) => new UpstreamError({ kind: 'connection', message, cause }),
  /** No answer within the time the call had. */
  timeout: (message: string) => new UpstreamError({ kind: 'timeout', message }),
  /** Nobody waits for the answer any more. */
  cancelled: (message: string, cause?: unknown) => new UpstreamError({ kind: 'cancelled', message, cause }),
};

/** Seconds to wait from a Retry-After header (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
