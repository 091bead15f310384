/**
 * Where an Anthropic-style upstream is, how to present a channel's key to it, and how its
 * failures read: Anthropic answers 529 when it is overloaded, reported as the 503 it means, and
 * its error bodies are handed on in OpenAI's shape (see `error-body.ts`).
 */
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { keyInHeaders } from '../channel-credential.ts';
import type { ProviderApi } from '../provider.ts';
import { errorDetail, openaiShapedBody, OVERLOADED_STATUS } from './error-body.ts';

/**
 * The API version the mapping is written for. 2023-06-01 still takes `temperature` and `top_p`,
 * which the 2026-10-21 version refuses.
 */
export const ANTHROPIC_VERSION = '2023-06-01';

export const anthropicApi = {
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, ''),
  prepare: keyInHeaders((key) => ({ 'x-api-key': key, 'anthropic-version': ANTHROPIC_VERSION })),
  streamEncoding: 'sse',
  endpoints: {
    chat: () => '/v1/messages',
    messages: () => '/v1/messages',
    countTokens: () => '/v1/messages/count_tokens',
  },
  // A Messages client's version and betas, byte for byte: a beta the gateway does not know is the
  // upstream's to judge, never the gateway's to refuse.
  clientHeaders: ['anthropic-version', 'anthropic-beta'],
  failure: (error: UpstreamError): UpstreamError => {
    if (error.kind !== 'http') return error;
    const detail = errorDetail(error.body);
    const status = error.status === OVERLOADED_STATUS ? 503 : error.status;
    if (!detail && status === error.status) return error;
    // A 429's Retry-After is kept: the failure policy rests the channel that long.
    return upstreamFailure.http(status, error.message, { retryAfter: error.retryAfter, body: detail ? openaiShapedBody(detail) : error.body, cause: error.cause });
  },
} satisfies ProviderApi;
