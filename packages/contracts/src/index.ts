/**
 * @gateway/contracts owns what the services agree on: queue names, job envelopes and payloads,
 * the management API's schemas and records, wire-format schemas, and the error type that
 * travels back on the reply path.
 */
export * from './errors.ts';
export { ownValue } from './own-value.ts';
export * from './validation.ts';
export { jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_OBJECT_KEYS } from './json-shape.ts';
export * from './queues.ts';
export * from './jobs.ts';
export * from './admin/records.ts';
export * from './admin/schemas.ts';
export { usernameKey, usernameSkeletons, skeleton } from './admin/username.ts';
export * from './wire/gemini-generate.ts';
export * from './wire/gemini-content.ts';
export * from './wire/pcm-audio.ts';
export * from './model-jobs.ts';
export * from './wire/openai-completion.ts';
export * from './wire/openai-chat.ts';
export * from './wire/openai-embeddings.ts';
export * from './wire/openai-speech.ts';
export * from './wire/openai-batch.ts';
export * from './model-endpoints.ts';
export * from './wire/anthropic-messages.ts';
export * from './wire/openai-responses.ts';
export * from './conversation/index.ts';
export { UpstreamError, upstreamFailure, NOT_JSON_BODY, parseRetryAfter, type UpstreamFailureKind, type UpstreamErrorOptions } from './upstream-failure.ts';
export { channelKeySecrets, redactUpstreamText, redactUpstreamBody, replySecretForms, secretForms, withoutPathKeys, withoutReflectedSecret } from './upstream-text.ts';
export * from './worst-case-usage.ts';
export * from './gemini-worst-case.ts';
export * from './request-log.ts';
export * from './money/index.ts';
