/**
 * Where a Gemini-style upstream is, how to present a channel's key to it, and how its failures
 * read: Gemini puts the retry delay in the body rather than a Retry-After header, and answers a
 * bad key with "400 API_KEY_INVALID", which is the channel's fault (a bad key), not the
 * caller's, so it is reported as the 401 it means.
 */
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { keyInHeaders } from '../channel-credential.ts';
import type { ProviderApi } from '../provider.ts';

/** Gemini names models `models/<id>`; the path wants the id alone. */
const modelSegment = (model: string) => encodeURIComponent(model.replace(/^models\//, ''));

export const geminiApi = {
  /** A channel's base_url may be given with or without a trailing `/v1beta`. */
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, '').replace(/\/v1beta$/, ''),
  prepare: keyInHeaders((key) => ({ 'x-goog-api-key': key })),
  streamEncoding: 'sse',
  endpoints: {
    generateContent: (model: string, stream: boolean) =>
      `/v1beta/models/${modelSegment(model)}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    batchEmbedContents: (model: string) => `/v1beta/models/${modelSegment(model)}:batchEmbedContents`,
  },
  failure: (error: UpstreamError): UpstreamError => {
    if (error.kind !== 'http') return error;
    const status = error.status === 400 && errorReason(error.body) === 'API_KEY_INVALID' ? 401 : error.status;
    const retryAfter = error.retryAfter ?? retryDelaySeconds(error.body);
    if (status === error.status && retryAfter === error.retryAfter) return error;
    return upstreamFailure.http(status, error.message, { retryAfter, body: error.body, cause: error.cause });
  },
} satisfies ProviderApi;

function errorDetails(body: unknown): Record<string, unknown>[] {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
  return Array.isArray(details) ? details.filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null) : [];
}

function errorReason(body: unknown): string | undefined {
  const info = errorDetails(body).find((d) => typeof d.reason === 'string');
  return info?.reason as string | undefined;
}

/** `google.rpc.RetryInfo.retryDelay`, a duration such as "37s" or "1.5s", in whole seconds. */
function retryDelaySeconds(body: unknown): number | undefined {
  const info = errorDetails(body).find((d) => String(d['@type'] ?? '').endsWith('google.rpc.RetryInfo'));
  const match = typeof info?.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(info.retryDelay) : null;
  return match ? Math.ceil(Number(match[1])) : undefined;
}
