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

/** Seconds to wait from a Retry-After header (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
