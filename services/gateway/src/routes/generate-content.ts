/**
 * `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`, the Gemini wire
 * format for speech generation (the key authenticated by the Gemini plugin's hook: a Bearer
 * header or Gemini's own `x-goog-api-key`): validate the body with the one Gemini schema, and relay the audio worker's
 * answer. Everything else (enqueue-and-wait, streaming, cancellation, error rendering) is the
 * same code as the OpenAI path's; this file is only the Gemini adapter.
 */
import type { FastifyInstance } from 'fastify';
import { badRequest, geminiGenerateRequest, MAX_MODEL_NAME_CHARS, notFound, parseOrThrow, QueueName, speechWorstCase, type AudioJobPayload, type AudioMethod } from '@gateway/contracts';
import { callerOf } from '@gateway/admission';
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

const METHODS: readonly AudioMethod[] = ['generateContent', 'streamGenerateContent'];

/**
 * `{model}:{method}` from what follows `models/`. A model's name may hold slashes
 * (`vendor/model`, as the model lists show it: `models/vendor/model`), which the SDKs send as
 * they are; it is only ever looked up whole in the catalog.
 */
function modelAndMethod(target: string): { model: string; method: AudioMethod } | undefined {
  const colon = target.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const model = target.slice(0, colon);
  const method = target.slice(colon + 1) as AudioMethod;
  if (model.startsWith('/') || model.endsWith('/') || !METHODS.includes(method)) return undefined;
  return { model, method };
}

export function generateContentRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  // A route like `/v1beta/models/:model:generateContent` would read the colon as a parameter;
  // the wildcard takes `{model}:{method}` whole and it is split here.
  app.post<{ Params: { '*': string }; Querystring: Record<string, string | string[] | undefined> }>('/models/*', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
    const target = modelAndMethod(request.params['*']);
    if (!target) {
      throw notFound(`no route for POST ${pathOf(request.url)}: use /v1beta/models/{model}:generateContent or :streamGenerateContent`);
    }
    if (target.model.length > MAX_MODEL_NAME_CHARS) throw badRequest(`the model in the path must be at most ${MAX_MODEL_NAME_CHARS} characters`, 'model');
    const holder = keyHolderOf(request);
    const body = parseOrThrow(geminiGenerateRequest, request.body);
    options.apiKeys.authorizeModel(holder, target.model);
    const payload: AudioJobPayload = {
      caller: callerOf(holder),
      model: target.model,
      method: target.method,
      request: body,
    };
    let stream: EventStreamFormat | undefined;
    if (target.method === 'streamGenerateContent') stream = request.query.alt === 'sse' ? geminiEventStream : geminiJsonArrayStream();
    return relayModelJob(request, reply, {
      ...relayOptionsOf(options),
      queue: QueueName.audio,
      payload,
      holder,
      worstCase: speechWorstCase(body),
      stream,
    });
  });
}
