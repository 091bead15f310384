/**
 * One error, three renderings: the OpenAI body on /v1, the Gemini body on /v1beta, and
 * new-api's envelope on the management API and everything else. Statuses and retry headers are
 * shared. Each wire format's plugin answers its errors and unknown paths in its own format
 * (`useErrorFormat`), as Fastify's encapsulation intends.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { badRequest, GatewayError, geminiError, internalError, notFound, openaiErrorBody, payloadTooLarge, unsupportedMediaType } from '@gateway/contracts';
import { isRedisUnavailable, redisUnavailableError } from '@gateway/queue';

export interface ErrorFormat {
  body(error: GatewayError): unknown;
  /** The status the format answers an error with, where it differs from the error's (Anthropic's 529). */
  status?(error: GatewayError): number;
}


export const openaiFormat: ErrorFormat = {
  body: openaiErrorBody,
};

/**
 * Gemini's `{"error":{code,message,status}}`, with the status string of `geminiStatusText`; a 400
 * that names a field also carries it as google.rpc.BadRequest, as Gemini's own 400s do.
 */
export const geminiFormat: ErrorFormat = {
  body: (error) =>
    error.upstreamBody ??
    geminiError(
      error.status,
      error.message,
      error.status === 400 && error.param
        ? [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: error.param, description: error.message }] }]
        : undefined,
    ),
};

/** Anthropic's error type for each status it answers (its errors page). */
const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/**
 * Anthropic's `{"type":"error","error":{type,message}}`. A 503 (the gateway's backlog full or
 * draining) and a 502 made of an upstream's 503 (Anthropic's own 529, read as 503 by the
 * provider) are Anthropic's 529 `overloaded_error`, which its SDKs and Claude Code retry; any
 * other status keeps its number, its type from Anthropic's table.
 */
const anthropicStatus = (error: GatewayError) => (error.status === 503 || (error.status === 502 && error.upstreamStatus === 503) ? 529 : error.status);

export const anthropicFormat: ErrorFormat = {
  status: anthropicStatus,
  body: (error) => {
    const status = anthropicStatus(error);
    const type = ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
    return { type: 'error', error: { type, message: error.message } };
  },
};

export const adminFormat: ErrorFormat = {
  body: (error) => ({ success: false, message: error.message }),
};

/**
 * The format of a URL no route has matched yet: only for the errors Fastify raises before
 * routing (a path that is not valid percent-encoding), when the URL is all there is to go by.
 */
export function formatForUrl(url: string): ErrorFormat {
  if (url.startsWith('/v1beta/')) return geminiFormat;
  if (url.startsWith('/v1/')) return openaiFormat;
  return adminFormat;
}

/** Path without the query string, so a `?key=` never reaches a log line or an error. */
export const pathOf = (url: string) => url.split('?', 1)[0];

/**
 * Errors thrown in this plugin's routes and hooks (a root hook's too, for its routes), and the
 * paths under its prefix that match no route, answered in `format`.
 */
export function useErrorFormat(app: FastifyInstance, format: ErrorFormat, options: { notFound?: boolean; notFoundHint?: string } = {}): void {
  app.setErrorHandler((error, request, reply) => {
    const failure = fromFastifyError(error);
    if (failure.status >= 500 && !(error instanceof GatewayError)) request.log.error({ err: error, reqId: request.id }, 'unhandled error');
    return sendError(reply, failure, format);
  });
  // A second wire format under the same prefix (Gemini's beside OpenAI's under /v1) leaves the
  // prefix's unmatched paths to the first.
  if (options.notFound === false) return;
  const hint = options.notFoundHint ? `: ${options.notFoundHint}` : '';
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, notFound(`no route for ${request.method} ${pathOf(request.url)}${hint}`), format),
  );
}

/** `Retry-After` and `x-should-retry` for an error, whatever format its body takes. */
export function setRetryHeaders(reply: FastifyReply, error: GatewayError): void {
  if (error.retryAfter !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(error.retryAfter))));
  if (error.shouldRetry === false) reply.header('x-should-retry', 'false');
}

/** Sets status and retry headers, and sends the body in the route's format. */
export function sendError(reply: FastifyReply, error: GatewayError, format: ErrorFormat): FastifyReply {
  setRetryHeaders(reply, error);
  return reply.status(format.status?.(error) ?? error.status).send(format.body(error));
}

/** Fastify's own errors (body parsing, limits) as gateway errors. */
export function fromFastifyError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  const e = error as { statusCode?: number; code?: string; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge('request body is larger than this route allows (BODY_LIMIT_BYTES for model requests, MANAGEMENT_BODY_LIMIT_BYTES elsewhere)');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedMediaType('unsupported Content-Type: send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return badRequest('request body is empty: send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return badRequest(`malformed JSON body: ${e.message ?? ''}`.trim());
  }
  if (e.statusCode === 400 && e.message) {
    return badRequest(e.message.startsWith('Body') || e.message.includes('JSON') ? `malformed JSON body: ${e.message}` : e.message);
  }
  if (isRedisUnavailable(error)) return redisUnavailableError();
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return new GatewayError({ status: e.statusCode, code: 'invalid_request', message: e.message ?? 'bad request' });
  }
  return internalError();
}
