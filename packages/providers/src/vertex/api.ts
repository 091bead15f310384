/**
 * Where Vertex AI is, how a request carries the channel's service account, and how its failures
 * read. Every path is under the credential's project and region,
 * `{base_url}/v1/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}`:
 * the endpoints give the part from `/publishers/`, and `prepare` puts the location before it and
 * the service account's access token (`access-tokens.ts`) in `Authorization: Bearer`.
 *
 * Two publishers, two wire formats: Google's models answer in Gemini's format
 * (`:generateContent`, `:streamGenerateContent?alt=sse`, `:predict` for embeddings), Anthropic's
 * in Messages' (`:rawPredict`, `:streamRawPredict`, the version in the body, and the client's
 * `anthropic-beta` taken as it is), and their count_tokens at `count-tokens:rawPredict`.
 *
 * Failures: a 401 (UNAUTHENTICATED: a token expired or revoked) drops the held token, so the
 * next attempt fetches another, and counts toward the channel's auto-disable; so does a 403
 * PERMISSION_DENIED (the account may not call Vertex AI in that project), read as the 401 it
 * means. 429 RESOURCE_EXHAUSTED waits in the queue as any 429. The rest as each publisher's own
 * provider reads them (Gemini's retry delay in the body, Anthropic's 529).
 */
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { anthropicApi } from '../anthropic/api.ts';
import { geminiApi } from '../gemini/api.ts';
import type { OutgoingRequest, ProviderApi } from '../provider.ts';
import { accessTokenFor, dropAccessToken } from './access-tokens.ts';
import { vertexCredential, vertexCredentialProblem } from './credential.ts';

/** The `anthropic_version` Vertex AI takes in the body of an Anthropic model's request. */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';

/** Models of Anthropic's on Vertex AI (`claude-sonnet-4@20250514`); every other is Google's. */
export const isAnthropicModel = (model: string) => /^(?:anthropic\/)?claude-/i.test(model);

/** A model's id as Vertex names it (`claude-sonnet-4@20250514`), without a publisher's prefix. */
export const vertexModelId = (model: string) => model.replace(/^(?:models\/|google\/|anthropic\/)/, '');

/** A model's path segment: `@` kept, as Vertex names versions. */
const modelSegment = (model: string) => encodeURIComponent(vertexModelId(model)).replaceAll('%40', '@');

async function prepare(request: OutgoingRequest, key: string): Promise<OutgoingRequest> {
  const credential = vertexCredential(key);
  const token = await accessTokenFor(credential);
  const url = new URL(request.url);
  const at = url.pathname.lastIndexOf('/publishers/');
  const location = `/v1/projects/${encodeURIComponent(credential.project)}/locations/${encodeURIComponent(credential.region)}`;
  url.pathname = url.pathname.slice(0, at) + location + url.pathname.slice(at);
  return { ...request, url: url.toString(), headers: { authorization: `Bearer ${token}`, ...request.headers } };
}

/** Vertex's reading of a failure, before the publisher's. */
function vertexFailure(error: UpstreamError, key: string): UpstreamError {
  if (error.kind !== 'http') return error;
  if (error.status === 401) forgetToken(key);
  const status = (error.body as { error?: { status?: unknown } } | undefined)?.error?.status;
  if (error.status !== 403 || status !== 'PERMISSION_DENIED') return error;
  return upstreamFailure.credentialRefused(error.message, { retryAfter: error.retryAfter, body: error.body, cause: error.cause });
}

function forgetToken(key: string): void {
  try {
    dropAccessToken(vertexCredential(key));
  } catch {
    /* a key it cannot read holds no token */
  }
}

const common = {
  /** A channel's base_url is the region's endpoint (`https://us-central1-aiplatform.googleapis.com`), with or without `/v1`. */
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''),
  prepare,
  checkCredential: vertexCredentialProblem,
  streamEncoding: 'sse',
} as const;

/** Google's models: Gemini's wire format. */
export const vertexGoogleApi = {
  ...common,
  endpoints: {
    generateContent: (model: string, stream: boolean) => `/publishers/google/models/${modelSegment(model)}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    predict: (model: string) => `/publishers/google/models/${modelSegment(model)}:predict`,
  },
  failure: (error: UpstreamError, key: string) => geminiApi.failure(vertexFailure(error, key)),
} satisfies ProviderApi;

/** Anthropic's models: Messages' wire format. */
export const vertexAnthropicApi = {
  ...common,
  endpoints: {
    rawPredict: (model: string, stream: boolean) => `/publishers/anthropic/models/${modelSegment(model)}:${stream ? 'streamRawPredict' : 'rawPredict'}`,
    /** count_tokens for every Claude model at one endpoint: the model goes in the body. */
    countTokens: () => '/publishers/anthropic/models/count-tokens:rawPredict',
  },
  clientHeaders: ['anthropic-beta'],
  failure: (error: UpstreamError, key: string) => anthropicApi.failure(vertexFailure(error, key)),
} satisfies ProviderApi;
