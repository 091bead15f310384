/**
 * Anthropic's error body, `{"type":"error","error":{"type","message"}}`, wherever it comes: as
 * the body of a failed reply, inside a 200, or as a stream's `error` event. Its type says the
 * status (Anthropic's errors page); the body is handed on in OpenAI's shape, because what the
 * client of a chat completion reads is an OpenAI error.
 */
import { ownValue, UpstreamError, upstreamFailure } from '@gateway/contracts';

/** Anthropic's own status for an overloaded API: no standard HTTP status says it. */
export const OVERLOADED_STATUS = 529;

/**
 * The status each documented error type stands for. `overloaded_error` (Anthropic's 529) is
 * reported as 503, which every HTTP client and the failure policy read as "unavailable, retry".
 */
const STATUS_OF_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 503,
};

export interface AnthropicErrorDetail {
  type: string;
  message: string;
}

/** The `error` of an Anthropic error body, or undefined when the body is not one. */
export function errorDetail(body: unknown): AnthropicErrorDetail | undefined {
  const error = (body as { error?: unknown } | null | undefined)?.error;
  if (typeof error !== 'object' || error === null) return undefined;
  const { type, message } = error as { type?: unknown; message?: unknown };
  return { type: typeof type === 'string' ? type : 'api_error', message: typeof message === 'string' ? message : 'unknown error' };
}

/** The status an error type stands for; a type Anthropic may add later is a bad gateway. */
export const statusOfErrorType = (type: string): number => ownValue(STATUS_OF_TYPE, type) ?? 502;

/** The error as an OpenAI client reads it, its Anthropic type kept as the type. */
export const openaiShapedBody = (detail: AnthropicErrorDetail) => ({ error: { message: detail.message, type: detail.type, param: null, code: null } });

/** An error Anthropic put where a reply or a stream event should be (a 200 body, an `error` event). */
export function errorInPlaceOfReply(body: unknown): UpstreamError {
  const detail = errorDetail(body) ?? { type: 'api_error', message: 'unknown error' };
  return upstreamFailure.http(statusOfErrorType(detail.type), `upstream error: ${detail.message}`, { body: openaiShapedBody(detail) });
}
