/**
 * Gemini's door on the one model route (`model-endpoint-route.ts`): `POST
 * /v1beta/models/{model}:{method}` (and under `/v1`), the key authenticated by the Gemini
 * plugin's hook (a Bearer header, Gemini's `x-goog-api-key`, or `?key=`). One route takes every
 * method of the door's entries: the model and method come from the path, the entry by the
 * method and, for `generateContent`, the body (speech or chat: the entries' `when`). A
 * `:streamGenerateContent` answers in server-sent events with `?alt=sse`, else as one JSON array
 * whose elements arrive as they are produced. An `:embedContent` runs as a batch of one.
 */
import type { FastifyInstance } from 'fastify';
import {
  badRequest,
  endpointsOf,
  geminiMethodOf,
  geminiPath,
  MAX_MODEL_NAME_CHARS,
  notFound,
  type GeminiBatchEmbedRequest,
  type GeminiEmbedContentRequest,
} from '@gateway/contracts';
import { geminiFormat, pathOf } from '../http/error-formats.ts';
import { serverSentEvents, type EventStreamFormat } from './model-relay.ts';
import { modelRouteOptions, relayModelEndpoint, type DoorAdapter, type ModelRouteOptions } from './model-endpoint-route.ts';

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

/**
 * `{model}:{method}` from what follows `models/`. A model's name may hold slashes
 * (`vendor/model`, as the model lists show it: `models/vendor/model`), which the SDKs send as
 * they are; it is only ever looked up whole in the catalog.
 */
function modelAndMethod(target: string, methods: readonly string[]): { model: string; method: string } | undefined {
  const colon = target.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const model = target.slice(0, colon);
  const method = target.slice(colon + 1);
  if (model.startsWith('/') || model.endsWith('/') || !methods.includes(method)) return undefined;
  return { model, method };
}

/** An embedding request as a batch, each request naming the path's model or none (Gemini refuses another). */
function embedBatchOf(model: string, method: string, body: GeminiEmbedContentRequest | GeminiBatchEmbedRequest): GeminiBatchEmbedRequest {
  const batch = method === 'embedContent' ? { requests: [body as GeminiEmbedContentRequest] } : (body as GeminiBatchEmbedRequest);
  batch.requests.forEach((one, i) => {
    if (one.model !== undefined && one.model.replace(/^models\//, '') !== model) {
      const field = method === 'embedContent' ? 'model' : `requests[${i}].model`;
      throw badRequest(`invalid ${field}: must be the model of the path, models/${model}`, field);
    }
  });
  return { requests: batch.requests.map(({ model: _model, ...one }) => one) };
}

/** The door for one request: the model and method of its path go with its job. */
const geminiDoor = (model: string, method: string): DoorAdapter => ({
  jobOf: (_request, body, endpoint) => ({
    model,
    request: endpoint.operation === 'embedContent' ? embedBatchOf(model, method, body as GeminiBatchEmbedRequest) : body,
    fields: { model, method },
  }),
  eventStream: (request) => ((request.query as { alt?: unknown }).alt === 'sse' ? geminiEventStream : geminiJsonArrayStream()),
});

export function geminiModelRoutes(app: FastifyInstance, options: ModelRouteOptions): void {
  const entries = endpointsOf('gemini');
  const methods = [...new Set(entries.flatMap((entry) => entry.paths.map(geminiMethodOf)))];
  const usage = `use /v1beta/models/{model}:${methods.slice(0, -1).join(', :')} or :${methods.at(-1)}`;
  // A route like `/v1beta/models/:model:generateContent` would read the colon as a parameter;
  // the wildcard takes `{model}:{method}` whole and it is split here.
  app.post<{ Params: { '*': string } }>('/models/*', modelRouteOptions(options), async (request, reply) => {
    const target = modelAndMethod(request.params['*'], methods);
    if (!target) throw notFound(`no route for POST ${pathOf(request.url)}: ${usage}`);
    if (target.model.length > MAX_MODEL_NAME_CHARS) throw badRequest(`the model in the path must be at most ${MAX_MODEL_NAME_CHARS} characters`, 'model');
    const path = geminiPath(target.method);
    const endpoint = entries.find((entry) => entry.paths.includes(path) && (entry.when?.(request.body) ?? true))!;
    return relayModelEndpoint(request, reply, options, endpoint, path, geminiDoor(target.model, target.method));
  });
}
