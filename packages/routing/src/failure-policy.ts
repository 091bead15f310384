/**
 * What a failed upstream call means for the request and for the channel: try another channel,
 * wait for a rate-limited one, or hand the caller's own mistake back unchanged; and which status
 * the client gets when every channel failed. Provider-agnostic: it reads only `UpstreamError`.
 */
import { GatewayError, rateLimited, timedOut, upstreamError } from '@gateway/contracts';
import { NOT_JSON_BODY, UpstreamError } from '@gateway/contracts';

export type FailureDecision =
  /**
   * Another channel may succeed. `counts`: against this channel's health (cooldown, and with
   * `auth` its auto-disable); a failure a request can bring on itself does not. `byRequest`: a
   * failure a request's size or content may have caused (a time-out, a 5xx, a malformed reply),
   * which cools the channel for everyone only when the failures came from two users or more
   * (channel-health.ts); a refused key, an account out of credit or a connection that cannot be
   * made are the channel's whoever sent the request.
   */
  | { action: 'failover'; auth: boolean; counts: boolean; byRequest: boolean; reason: string }
  /**
   * The upstream is busy (429): try another channel, and this one again once it has rested
   * (`retryAfterMs` when the upstream said, else a back-off). The channel works, so its health
   * is left as it is.
   */
  | { action: 'back-off'; retryAfterMs: number | undefined }
  /** The caller's own request is at fault: return the upstream's answer as it is. */
  | { action: 'return'; error: GatewayError };

const failoverStatuses = new Set([401, 403, 408, 409, 429]);

/**
 * The longest an upstream's Retry-After rests a channel for every request: one request's 429
 * with `Retry-After: 3600` (or a date a week ahead) refused every tenant's requests on the
 * channel for that long, with no upstream call.
 */
export const MAX_UPSTREAM_REST_MS = 60_000;

/**
 * Which failures one tenant could bring on a shared channel by what it sends, so that they never
 * rest, cool down or disable it for the others:
 * - a 403: an upstream that moderates answers it for flagged input (OpenRouter), Gemini for a
 *   file of another project; three such requests auto-disabled every channel of a model. Only a
 *   401 says the channel's key is refused. A 403 still fails over (another channel's key may
 *   have the access), but counts for nothing.
 * - a 429 for a request larger than the upstream's limit per minute ("Request too large"): no
 *   wait helps it, so it is the caller's, as it came.
 * - a reply past the gateway's size limits (what the request asked for): the caller's too.
 */
export function decideOnFailure(error: UpstreamError): FailureDecision {
  if (error.kind === 'protocol' && error.ofTheRequest) return { action: 'return', error: upstreamError(`${error.message}: ask for less`) };
  if (error.kind !== 'http') {
    return { action: 'failover', auth: false, counts: true, byRequest: error.kind !== 'connection', reason: error.kind === 'timeout' ? 'time-out' : error.message };
  }
  const status = error.status;
  if (status === 429 && isTooLargeForTheLimit(error)) return { action: 'return', error: callerError(error) };
  if (status === 429 && !isQuotaExhausted(error)) {
    return { action: 'back-off', retryAfterMs: error.retryAfter ? Math.min(error.retryAfter * 1000, MAX_UPSTREAM_REST_MS) : undefined };
  }
  if (status >= 500 || failoverStatuses.has(status) || status < 400) {
    const ofTheChannel = status === 401 || status === 429;
    return { action: 'failover', auth: status === 401, counts: status !== 403, byRequest: !ofTheChannel, reason: `upstream answered ${status}` };
  }
  return { action: 'return', error: callerError(error) };
}

/** OpenAI's 429 for one request larger than the limit a minute: "Request too large for … Requested 900000". */
function isTooLargeForTheLimit(error: UpstreamError): boolean {
  const message = (error.body as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof message === 'string' && /request too large/i.test(message);
}

/**
 * OpenAI answers 429 `insufficient_quota` when the channel's account has run out of credit:
 * waiting does not help, so it is a failure like any other.
 */
function isQuotaExhausted(error: UpstreamError): boolean {
  const detail = (error.body as { error?: { code?: unknown; type?: unknown } } | undefined)?.error;
  return typeof detail === 'object' && detail !== null && (detail.code === 'insufficient_quota' || detail.type === 'insufficient_quota');
}

/** The upstream's 4xx, its status kept and its body passed through when it is a proper error body. */
function callerError(error: UpstreamError): GatewayError {
  const body = error.body as { error?: unknown } | undefined;
  const passable = typeof body === 'object' && body !== null && typeof body.error === 'object' && body.error !== null;
  const message = passable && typeof (body.error as { message?: unknown }).message === 'string'
    ? (body.error as { message: string }).message
    : error.message;
  return new GatewayError({
    status: error.status,
    code: error.status === 404 ? 'model_not_found' : 'invalid_request',
    message,
    upstreamBody: passable ? body : undefined,
  });
}

/**
 * The answer for a request whose channels are all rate-limited for longer than it may wait:
 * 429, with the time until the first of them may be called again.
 */
export function rateLimitedError(retryAfterMs: number): GatewayError {
  return rateLimited(
    'the upstream is rate-limiting requests and would not take this one before its time-out; retry later',
    Math.max(1, Math.ceil(retryAfterMs / 1000)),
  );
}

/** The error for a request whose every candidate channel failed, from the last failure. */
export function exhaustedError(last: UpstreamError | undefined, tried: number): GatewayError {
  const suffix = tried > 1 ? ` (after trying ${tried} channels)` : '';
  if (!last) return upstreamError(`the upstream failed${suffix}`);
  if (last.kind === 'timeout') {
    return timedOut(`the upstream did not answer in time${suffix}`);
  }
  if (last.kind === 'http' && last.status === 429 && isQuotaExhausted(last)) {
    return upstreamError(`the upstream account of the channel is out of quota${suffix}`);
  }
  if (last.kind === 'http' && last.status === 429) {
    return rateLimited(`the upstream is rate-limiting requests; retry later${suffix}`, last.retryAfter ?? 1);
  }
  if (last.kind === 'http' && last.status === 401) {
    return upstreamError(`the upstream refused the channel's credentials${suffix}`);
  }
  // Every channel refused it: most often for what it asks (content an upstream moderates, a file
  // of another project), so the upstream's own words, as its 403.
  if (last.kind === 'http' && last.status === 403) return callerError(last);
  // The upstream's own words are not relayed for a 5xx; whether it sent JSON at all is.
  const notJson = last.kind === 'http' && last.message.endsWith(NOT_JSON_BODY) ? NOT_JSON_BODY : '';
  // A protocol error's message is the gateway's own (malformed, or past a size limit).
  if (last.kind === 'protocol') return upstreamError(`${last.message}${suffix}`);
  const what = last.kind === 'http' ? `answered ${last.status}${notJson}` : 'could not be reached or broke the connection';
  return upstreamError(`the upstream ${what}${suffix}`, last.kind === 'http' ? last.status : undefined);
}
