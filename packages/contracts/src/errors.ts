/**
 * One error type for the whole request path. Workers raise it, it travels back to the ingress
 * on the reply path as plain data (`ErrorReply`), and each wire format renders it its own way.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'invalid_api_key'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'model_not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'insufficient_quota'
  | 'upstream_error'
  | 'loop_detected'
  | 'no_channel'
  | 'overloaded'
  | 'timeout'
  | 'cancelled'
  | 'withdrawn'
  | 'internal';

export interface ErrorReply {
  status: number;
  code: ErrorCode;
  message: string;
  /** The request field at fault, for 400s. */
  param?: string | null;
  /** Seconds after which a retry may succeed; sent as Retry-After. */
  retryAfter?: number;
  /** false when retrying cannot help (x-should-retry: false). */
  shouldRetry?: boolean;
  /** An upstream's own error body, passed through for the caller's 4xx. */
  upstreamBody?: unknown;
  /**
   * The status the last upstream answered, on a 502 made of it: a door whose format tells an
   * overloaded provider apart (Anthropic's 529 `overloaded_error`) reads it.
   */
  upstreamStatus?: number;
}

export class GatewayError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly retryAfter?: number;
  readonly shouldRetry?: boolean;
  readonly upstreamBody?: unknown;
  readonly upstreamStatus?: number;

  constructor(reply: ErrorReply) {
    super(reply.message);
    this.name = 'GatewayError';
    this.status = reply.status;
    this.code = reply.code;
    this.param = reply.param ?? null;
    this.retryAfter = reply.retryAfter;
    this.shouldRetry = reply.shouldRetry;
    this.upstreamBody = reply.upstreamBody;
    this.upstreamStatus = reply.upstreamStatus;
  }

  toReply(): ErrorReply {
    const reply: ErrorReply = { status: this.status, code: this.code, message: this.message, param: this.param };
    if (this.retryAfter !== undefined) reply.retryAfter = this.retryAfter;
    if (this.shouldRetry !== undefined) reply.shouldRetry = this.shouldRetry;
    if (this.upstreamBody !== undefined) reply.upstreamBody = this.upstreamBody;
    if (this.upstreamStatus !== undefined) reply.upstreamStatus = this.upstreamStatus;
    return reply;
  }

  static from(error: unknown): GatewayError {
    if (error instanceof GatewayError) return error;
    return internalError();
  }
}

/**
 * The catalogue: every error the gateway makes, by what happened, with its status and code made
 * here once. Code throws `badRequest(…)`, `overloaded(…)`; a `new GatewayError` elsewhere only
 * carries a status it did not choose (an upstream's refusal relayed, an error read back from
 * the reply path).
 */

/** 400: the request is wrong; `param` names the field at fault. */
export const badRequest = (message: string, param: string | null = null) =>
  new GatewayError({ status: 400, code: 'invalid_request', message, param });
/** 401: no credentials, or a sign-in that failed. */
export const unauthenticated = (message: string) => new GatewayError({ status: 401, code: 'unauthenticated', message });
/** 401: an API key that is missing, unknown, disabled, expired or deleted. */
export const invalidApiKey = (message: string) => new GatewayError({ status: 401, code: 'invalid_api_key', message });
/** 403: who asks may not do this. */
export const forbidden = (message: string, param: string | null = null) => new GatewayError({ status: 403, code: 'permission_denied', message, param });
/** 404: no such thing (a record, a file, a batch, a path). */
export const notFound = (message: string, param: string | null = null) => new GatewayError({ status: 404, code: 'not_found', message, param });
/** 403: the key (or its user) is limited to models that do not include this one. */
export const modelNotAllowed = (model: string) => forbidden(`this API key may not use the model "${model}"`, 'model');
/** 404: no such model, or none this key may use or a channel serves. */
export const modelNotFound = (message: string, param: string | null = 'model') => new GatewayError({ status: 404, code: 'model_not_found', message, param });
/** 409: the change contradicts what is stored. */
export const conflict = (message: string) => new GatewayError({ status: 409, code: 'conflict', message });
/** 413: a body or a file larger than its limit. */
export const payloadTooLarge = (message: string, param: string | null = null) => new GatewayError({ status: 413, code: 'payload_too_large', message, param });
/** 408: the request did not arrive in time (its headers, or all of it). */
export const requestTimedOut = (message: string) => new GatewayError({ status: 408, code: 'timeout', message });
/** 431: the request's headers are larger than the gateway reads. */
export const headersTooLarge = (message: string) => new GatewayError({ status: 431, code: 'invalid_request', message });
/** 415: a Content-Type or Content-Encoding the route does not take. */
export const unsupportedMediaType = (message: string) => new GatewayError({ status: 415, code: 'unsupported_media_type', message });
/** 429 that waiting cures: a rate limit, a cap on requests in flight, quota held by requests in flight. */
export const rateLimited = (message: string, retryAfter: number) => new GatewayError({ status: 429, code: 'rate_limited', message, retryAfter });
/** 429 that waiting does not cure: the quota is used up (x-should-retry: false). */
export const insufficientQuota = (message: string) => new GatewayError({ status: 429, code: 'insufficient_quota', message, shouldRetry: false });
/** 499: the client went away (closed the connection) before its answer was ready. */
export const clientCancelled = () => new GatewayError({ status: 499, code: 'cancelled', message: 'the client closed the request' });

/** A job its sender withdrew before it began (a cancelled batch's line still waiting): it was not run. */
export const withdrawn = () => new GatewayError({ status: 409, code: 'withdrawn', message: 'the request was withdrawn before it began' });
/** 500: a fault of the gateway's own; the message says no more than that. */
export const internalError = () => new GatewayError({ status: 500, code: 'internal', message: 'internal error' });
/** 502: the upstream failed, refused the channel, or answered what cannot be relayed. */
export const upstreamError = (message: string, upstreamStatus?: number) =>
  new GatewayError({ status: 502, code: 'upstream_error', message, ...(upstreamStatus !== undefined ? { upstreamStatus } : {}) });
/** 503 that a retry after `retryAfter` seconds may cure: busy, shutting down, a store away for a moment. */
export const overloaded = (message: string, retryAfter = 1) => new GatewayError({ status: 503, code: 'overloaded', message, retryAfter });
/** 503 that no retry cures: a part this deployment runs without (x-should-retry: false). */
export const notConfigured = (message: string) => new GatewayError({ status: 503, code: 'overloaded', message, shouldRetry: false });
/** 503: the model has channels, but none may take a request now (all disabled or cooling down). */
export const noChannel = (message: string, retryAfter?: number) => new GatewayError({ status: 503, code: 'no_channel', message, retryAfter });
/** 504: the request, or the upstream, ran out of time. */
export const timedOut = (message: string, retryAfter?: number) => new GatewayError({ status: 504, code: 'timeout', message, retryAfter });
/** 508: a request that came from a gateway worker: a channel points back at a gateway. */
export const loopDetected = (message: string) => new GatewayError({ status: 508, code: 'loop_detected', message });

const openaiType = (error: GatewayError): string => {
  if (error.status === 401) return 'invalid_request_error';
  if (error.status === 403) return 'permission_error';
  if (error.status === 429) return error.code === 'insufficient_quota' ? 'insufficient_quota' : 'rate_limit_error';
  if (error.status === 504) return 'timeout_error';
  if (error.status >= 500) return 'server_error';
  return 'invalid_request_error';
};

/** The error as OpenAI's body (an upstream's own body passes through): live answers and batch error lines alike. */
export function openaiErrorBody(error: GatewayError): unknown {
  return error.upstreamBody ?? { error: { message: error.message, type: openaiType(error), param: error.param, code: error.code } };
}
