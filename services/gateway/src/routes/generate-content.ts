/**
 * Gemini's own model routes, `POST /v1beta/models/{model}:{method}` (and under `/v1`), the key
 * authenticated by the Gemini plugin's hook (a Bearer header, Gemini's `x-goog-api-key`, or
 * `?key=`): validate the body with the method's schema, and relay the worker's answer. Everything
 * else (admission, holds, enqueue-and-wait, streaming, cancellation, error rendering) is the
 * same code as the OpenAI routes' (`relayModelJob`); this file is only the Gemini adapter.
 *
 * - `:generateContent` / `:streamGenerateContent` asking for audio: speech, on the audio queue;
 * - the same asking for text: a chat model's, on the completion queue (operation `geminiChat`,
 *   the door's request as it came: passed through to a gemini channel, translated for an
 *   openai or anthropic one);
 * - `:embedContent` / `:batchEmbedContents`: embeddings, on the completion queue.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  asksForSpeech,
  badRequest,
  geminiBatchEmbedRequest,
  geminiChatRequest,
  geminiChatWorstCase,
  geminiEmbedContentRequest,
  geminiEmbedWorstCase,
  geminiGenerateRequest,
  MAX_MODEL_NAME_CHARS,
  notFound,
  parseOrThrow,
  QueueName,
  speechWorstCase,
  type AudioJobPayload,
  type AudioMethod,
  type CompletionJobPayload,
  type EmbedMethod,
  type GeminiBatchEmbedRequest,
  type ModelCaller,
} from '@gateway/contracts';
import { callerOf } from '@gateway/admission';
import { conversationOf, geminiOpening } from '@gateway/routing';
import { keyHolderOf } from '../auth/request-auth.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';
import { geminiFormat, pathOf } from '../error-formats.ts';
import { admissionGate, relayModelJob, serverSentEvents, type EventStreamFormat } from '../model-relay.ts';

/** Gemini's `?alt=sse` stream: `data: <GenerateContentResponse>` events, CRLF-framed, no `[DONE]`. */
const geminiEventStream = serverSentEvents(geminiFormat, { eol: '\r\n\r\n' });

/**
 * Gemini's stream without `alt=sse`: one JSON array whose elements arrive as they are produced.
 * Stateful (it must know whether an element was written), so one per request.
 */
function geminiJsonArrayStream(): EventStreamFormat {
  let opened = false;
  const open = () => {
    const prefix = opened ? ',\r\n' : '[';
    opened = true;
    return prefix;
  };
  return {
    contentType: 'application/json; charset=utf-8',
    chunk: (data) => open() + data,
    end: () => (opened ? ']' : '[]'),
    error: (error) => `${open()}${JSON.stringify(geminiFormat.body(error))}]`,
  };
}

type GeminiMethod = AudioMethod | EmbedMethod;
const METHODS: readonly GeminiMethod[] = ['generateContent', 'streamGenerateContent', 'embedContent', 'batchEmbedContents'];

/**
 * `{model}:{method}` from what follows `models/`. A model's name may hold slashes
 * (`vendor/model`, as the model lists show it: `models/vendor/model`), which the SDKs send as
 * they are; it is only ever looked up whole in the catalog.
 */
function modelAndMethod(target: string): { model: string; method: GeminiMethod } | undefined {
  const colon = target.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const model = target.slice(0, colon);
  const method = target.slice(colon + 1) as GeminiMethod;
  if (model.startsWith('/') || model.endsWith('/') || !METHODS.includes(method)) return undefined;
  return { model, method };
}

/** The job of a request: its queue, its payload, what it holds, whether it streams. */
interface GeminiJob {
  queue: QueueName;
  payload: AudioJobPayload | CompletionJobPayload;
  worstCase: number;
  streamed: boolean;
}

/** An embedding request as a batch, each request naming the path's model or none (Gemini refuses another). */
function embedBatchOf(model: string, method: EmbedMethod, body: unknown): GeminiBatchEmbedRequest {
  const batch = method === 'embedContent' ? { requests: [parseOrThrow(geminiEmbedContentRequest, body)] } : parseOrThrow(geminiBatchEmbedRequest, body);
  batch.requests.forEach((one, i) => {
    if (one.model !== undefined && one.model.replace(/^models\//, '') !== model) {
      const field = method === 'embedContent' ? 'model' : `requests[${i}].model`;
      throw badRequest(`invalid ${field}: must be the model of the path, models/${model}`, field);
    }
  });
  return { requests: batch.requests.map(({ model: _model, ...one }) => one) };
}

function jobOf(model: string, method: GeminiMethod, body: unknown, caller: ModelCaller, headers: FastifyRequest['headers']): GeminiJob {
  if (method === 'embedContent' || method === 'batchEmbedContents') {
    const request = embedBatchOf(model, method, body);
    return { queue: QueueName.completion, payload: { caller, operation: 'embedContent', model, method, request }, worstCase: geminiEmbedWorstCase(request), streamed: false };
  }
  const streamed = method === 'streamGenerateContent';
  if (asksForSpeech(body)) {
    const request = parseOrThrow(geminiGenerateRequest, body);
    return { queue: QueueName.audio, payload: { caller, operation: 'generateContent', model, method, request }, worstCase: speechWorstCase(request), streamed };
  }
  const request = parseOrThrow(geminiChatRequest, body);
  // A chat's turns are one conversation by a session header, or by their opening.
  const conversation = conversationOf({ tokenId: caller.tokenId, model, headers, ...geminiOpening(request) });
  const chatCaller = conversation ? { ...caller, conversation } : caller;
  return { queue: QueueName.completion, payload: { caller: chatCaller, operation: 'geminiChat', model, method, request }, worstCase: geminiChatWorstCase(request), streamed };
}

export function generateContentRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  // A route like `/v1beta/models/:model:generateContent` would read the colon as a parameter;
  // the wildcard takes `{model}:{method}` whole and it is split here.
  app.post<{ Params: { '*': string }; Querystring: Record<string, string | string[] | undefined> }>('/models/*', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
    const target = modelAndMethod(request.params['*']);
    if (!target) {
      throw notFound(`no route for POST ${pathOf(request.url)}: use /v1beta/models/{model}:generateContent, :streamGenerateContent, :embedContent or :batchEmbedContents`);
    }
    if (target.model.length > MAX_MODEL_NAME_CHARS) throw badRequest(`the model in the path must be at most ${MAX_MODEL_NAME_CHARS} characters`, 'model');
    const holder = keyHolderOf(request);
    const job = jobOf(target.model, target.method, request.body, callerOf(holder), request.headers);
    options.apiKeys.authorizeModel(holder, target.model);
    let stream: EventStreamFormat | undefined;
    if (job.streamed) stream = request.query.alt === 'sse' ? geminiEventStream : geminiJsonArrayStream();
    return relayModelJob(request, reply, {
      ...relayOptionsOf(options),
      queue: job.queue,
      payload: job.payload,
      holder,
      worstCase: job.worstCase,
      stream,
    });
  });
}
