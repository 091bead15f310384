/**
 * Every model endpoint of every door, one entry each: the path a client calls, its door, the
 * operation its job asks for, its queue, its body schema, the most quota a request may use,
 * whether and how it streams, and whether batches take it. The gateway registers its model
 * routes from this table (models/model-endpoint-route.ts), the Batch API checks and holds a line
 * by it (`batchEndpoints`), and the request log names routes by it (`routeOfOperation`): adding
 * an endpoint is its entry here and its mappings (packages/providers/src/doors and the
 * providers'), nothing else.
 *
 * `/v1/responses` is served by a route of its own (stored responses, background runs:
 * responses/responses-routes.ts in the gateway), which takes its schema, worst case and queue from
 * its entry here.
 */
import { z } from 'zod';
import { QueueName } from './queues.ts';
import type { ModelOperation } from './model-jobs.ts';
import { completionRequestSchema } from './wire/openai-completion.ts';
import { chatRequestSchema } from './wire/openai-chat.ts';
import { embeddingRequestSchema } from './wire/openai-embeddings.ts';
import { speechRequestSchema } from './wire/openai-speech.ts';
import { responsesBatchLineSchema, responsesRequestSchema, responsesWorstCase } from './wire/openai-responses.ts';
import { countTokensRequestSchema, messagesRequestSchema, messagesRequestTokens, messagesWorstCase } from './wire/anthropic-messages.ts';
import { geminiGenerateRequest } from './wire/gemini-generate.ts';
import { asksForSpeech, geminiBatchEmbedRequest, geminiChatRequest, geminiEmbedContentRequest } from './wire/gemini-content.ts';
import { CHAT_DEFAULT_MAX_TOKENS, chatWorstCase, COMPLETION_DEFAULT_MAX_TOKENS, completionWorstCase, embeddingWorstCase, openaiSpeechWorstCase, speechWorstCase } from './worst-case-usage.ts';
import { geminiChatWorstCase, geminiEmbedWorstCase } from './gemini-worst-case.ts';

/** A client wire format: each is a plugin of the gateway, with its own errors and key headers. */
export type ModelDoor = 'openai' | 'anthropic' | 'gemini';

/**
 * How a request asks for a stream: `'asked'` by its body's `stream: true`; `'never'`, where
 * `stream: true` is refused; `'always'` (speech: audio is relayed as it is made); or by the path
 * it calls (Gemini's `:streamGenerateContent`; its other path answers whole).
 */
export type StreamRule = 'asked' | 'never' | 'always' | { path: string };

export interface ModelEndpoint<Body = any> {
  door: ModelDoor;
  /** The paths a client calls, in full: Gemini's under `/v1beta` (its door serves them under `/v1` too, as Google does). */
  paths: readonly string[];
  /** Of the entries on one path, the one whose rule takes the body (Gemini's generateContent: speech or chat). */
  when?: (body: unknown) => boolean;
  operation: ModelOperation;
  queue: QueueName;
  schema: z.ZodType<Body>;
  worstCase(body: Body): number;
  stream: StreamRule;
  /**
   * Its schema gives a valid body back as it came (loose objects, no defaults, no transforms:
   * model-endpoints.test.ts), so the body's JSON as received stands for the parsed value in its
   * job (`requestJson`), and a batch line is stored as the schema gave it.
   */
  asReceived?: true;
  /** Batches take it: with its own schema for a line where a line may hold less than a live request. */
  batch?: true | { schema: z.ZodType<Body> };
  /** Served by a route of its own, not the door's generic one. */
  ownRoute?: true;
  /**
   * The body with the output cap its worst case assumed where it names none (undefined: it names
   * one). A caller with a budget in money is sent this, so that what it may spend is what it held:
   * an upstream given no cap writes as much as the model allows.
   */
  capOutput?(body: Body): Body | undefined;
}

/** Its schema types the worst case. */
const endpoint = <Body>(entry: ModelEndpoint<Body>): ModelEndpoint<Body> => entry;

/** A Gemini method's path. */
export const geminiPath = (method: string) => `/v1beta/models/{model}:${method}`;
/** The method a Gemini path calls. */
export const geminiMethodOf = (path: string) => path.slice(path.lastIndexOf(':') + 1);

const generateContent = [geminiPath('generateContent'), geminiPath('streamGenerateContent')];
const streamedGenerateContent = { path: geminiPath('streamGenerateContent') };

/** Every model endpoint, by name. */
export const modelEndpoints = {
  completions: endpoint({
    door: 'openai', paths: ['/v1/completions'], operation: 'completions', queue: QueueName.completion,
    schema: completionRequestSchema, worstCase: completionWorstCase, stream: 'asked', asReceived: true, batch: true,
    capOutput: (body) => (body.max_tokens == null ? { ...body, max_tokens: COMPLETION_DEFAULT_MAX_TOKENS } : undefined),
  }),
  chat: endpoint({
    door: 'openai', paths: ['/v1/chat/completions'], operation: 'chat', queue: QueueName.completion,
    schema: chatRequestSchema, worstCase: chatWorstCase, stream: 'asked', asReceived: true, batch: true,
    capOutput: (body) => (body.max_tokens == null && body.max_completion_tokens == null ? { ...body, max_completion_tokens: CHAT_DEFAULT_MAX_TOKENS } : undefined),
  }),
  embeddings: endpoint({
    door: 'openai', paths: ['/v1/embeddings'], operation: 'embeddings', queue: QueueName.completion,
    schema: embeddingRequestSchema, worstCase: embeddingWorstCase, stream: 'never', asReceived: true, batch: true,
  }),
  responses: endpoint({
    door: 'openai', paths: ['/v1/responses'], operation: 'responses', queue: QueueName.completion,
    schema: responsesRequestSchema, worstCase: responsesWorstCase, stream: 'asked', asReceived: true, ownRoute: true,
    // A line stands alone: nothing stores a line's response or looks one up for it.
    batch: { schema: responsesBatchLineSchema },
    capOutput: (body) => (body.max_output_tokens == null ? { ...body, max_output_tokens: CHAT_DEFAULT_MAX_TOKENS } : undefined),
  }),
  speech: endpoint({
    door: 'openai', paths: ['/v1/audio/speech'], operation: 'speech', queue: QueueName.audio,
    schema: speechRequestSchema, worstCase: openaiSpeechWorstCase, stream: 'always',
  }),
  messages: endpoint({
    door: 'anthropic', paths: ['/v1/messages'], operation: 'messages', queue: QueueName.completion,
    schema: messagesRequestSchema, worstCase: messagesWorstCase, stream: 'asked', asReceived: true,
  }),
  // Never charged; held as its prompt, so a key out of quota is refused here as everywhere.
  countTokens: endpoint({
    door: 'anthropic', paths: ['/v1/messages/count_tokens'], operation: 'countTokens', queue: QueueName.completion,
    schema: countTokensRequestSchema, worstCase: (body) => messagesRequestTokens(body, 'hold'), stream: 'never', asReceived: true,
  }),
  // Speech keeps the operation `generateContent`, which only gemini channels offer, so a speech
  // job never reaches a channel a chat may use.
  geminiSpeech: endpoint({
    door: 'gemini', paths: generateContent, when: asksForSpeech, operation: 'generateContent', queue: QueueName.audio,
    schema: geminiGenerateRequest, worstCase: speechWorstCase, stream: streamedGenerateContent,
  }),
  geminiChat: endpoint({
    door: 'gemini', paths: generateContent, when: (body) => !asksForSpeech(body), operation: 'geminiChat', queue: QueueName.completion,
    schema: geminiChatRequest, worstCase: geminiChatWorstCase, stream: streamedGenerateContent,
    capOutput: (body) => (body.generationConfig?.maxOutputTokens == null
      ? { ...body, generationConfig: { ...body.generationConfig, maxOutputTokens: CHAT_DEFAULT_MAX_TOKENS } }
      : undefined),
  }),
  // Both embedding methods are one operation: the door sends one content as a batch of one.
  geminiEmbedContent: endpoint({
    door: 'gemini', paths: [geminiPath('embedContent')], operation: 'embedContent', queue: QueueName.completion,
    schema: geminiEmbedContentRequest, worstCase: (body) => geminiEmbedWorstCase({ requests: [body] }), stream: 'never',
  }),
  geminiBatchEmbedContents: endpoint({
    door: 'gemini', paths: [geminiPath('batchEmbedContents')], operation: 'embedContent', queue: QueueName.completion,
    schema: geminiBatchEmbedRequest, worstCase: geminiEmbedWorstCase, stream: 'never',
  }),
} satisfies Record<string, ModelEndpoint>;

const entries: readonly ModelEndpoint[] = Object.values(modelEndpoints);

/** The entries of one door, in the table's order. */
export const endpointsOf = (door: ModelDoor): ModelEndpoint[] => entries.filter((entry) => entry.door === door);

/** A model endpoint a batch may run, as a batch worker checks, holds and queues a line. */
export interface BatchEndpoint {
  queue: QueueName;
  operation: ModelOperation;
  /** A line's body's schema, which gives a valid body back as it came (`asReceived`). */
  schema: z.ZodType<{ model: string; stream?: boolean | null }>;
  worstCase(body: unknown): number;
  /** The entry's `capOutput`: a line of a caller with a budget in money is sent its held cap. */
  capOutput?(body: { model: string }): { model: string } | undefined;
}

/** The model endpoints a batch may run, by path: the table's entries with `batch`. */
export const batchEndpoints: Record<string, BatchEndpoint> = Object.fromEntries(
  entries.flatMap((entry) => {
    if (!entry.batch) return [];
    const view = { queue: entry.queue, operation: entry.operation, schema: entry.batch === true ? entry.schema : entry.batch.schema, worstCase: entry.worstCase, capOutput: entry.capOutput };
    return entry.paths.map((path) => [path, view]);
  }),
);

/**
 * The route each model operation, and each Gemini method, is served on, as the request log
 * names it: an operation's first path (speech and chat on Gemini's generateContent both).
 */
export const routeOfOperation: Record<string, string> = {};
for (const entry of entries) {
  routeOfOperation[entry.operation] ??= entry.paths[0]!;
  if (entry.door === 'gemini') for (const path of entry.paths) routeOfOperation[geminiMethodOf(path)] ??= path;
}
