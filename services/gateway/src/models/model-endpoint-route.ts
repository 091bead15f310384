/**
 * The one model route every door's endpoints run through, an entry of the endpoint table
 * (`modelEndpoints`, @gateway/contracts) each: validate the body with the entry's schema, refuse
 * `stream: true` where it does not stream, check the key (authenticated by the door plugin's
 * hook) may use the model, name the request's conversation by its operation's opening, and relay
 * the worker's answer, whole or in the door's event stream (`relayToWorker`: admission, hold,
 * queue, request log and charge). What a door does its own way is its `DoorAdapter`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, endpointsOf, parseOrThrow, type AudioJobPayload, type CompletionJobPayload, type ModelDoor, type ModelEndpoint } from '@gateway/contracts';
import { callerOf, cappedForBudget } from '@gateway/admission';
import { conversationOf, openingOfOperation } from '@gateway/routing';
import { keyHolderOf } from '../auth/request-auth.ts';
import type { JobClient } from '@gateway/queue';
import type { ModelAdmission } from '@gateway/admission';
import type { BodyBudget } from '../intake/body-budget.ts';
import type { FairTurns } from '../intake/fair-turns.ts';
import type { IntakeWindow } from '../intake/intake-window.ts';
import type { ApiKeyAuth } from '../auth/api-key.ts';
import type { ModelCatalog } from './model-catalog.ts';
import { admissionGate, relayToWorker, streamWindowOf, type EventStreamFormat, type RequestLogSink } from './model-relay.ts';

/** What the model routes are given (by each model API's plugin), and what they hand the relay. */
export interface ModelRouteOptions {
  jobs: JobClient;
  apiKeys: ApiKeyAuth;
  admission: ModelAdmission;
  /** Turns of the gateway's event loop, shared fairly between users (fair-turns.ts). */
  turns: FairTurns;
  /** At most so many requests of one user between their admission gate and their enqueue (intake-window.ts). */
  intake?: IntakeWindow;
  catalog: ModelCatalog;
  /** How long a request may wait for its answer (REQUEST_TIMEOUT_MS). */
  timeoutMs: number;
  /** The largest model request body (BODY_LIMIT_BYTES). */
  bodyLimitBytes: number;
  /** Body bytes in flight, per key and in all. */
  bodyBudget: BodyBudget;
  /** Bytes of one answer buffered for its client (RESPONSE_BUFFER_BYTES). */
  responseBufferBytes: number;
  /** Rows for the requests that end in the gateway without running on a worker. */
  requestLog?: RequestLogSink;
}

/** What every model route hands the relay from the plugin's options, besides its own job. */
export function relayOptionsOf(options: ModelRouteOptions) {
  return {
    jobs: options.jobs,
    timeoutMs: options.timeoutMs,
    responseBufferBytes: options.responseBufferBytes,
    streamWindowChars: streamWindowOf(options.responseBufferBytes),
    requestLog: options.requestLog,
    admission: options.admission,
    intake: options.intake,
  };
}

/** A body as its entry's schema gave it back (typed by that schema: each door reads what it knows is there). */
export type ValidBody = Record<string, any>;

/** What a request's job carries, as its door reads it from the valid body. */
export interface DoorJob {
  /** The model asked for. */
  model: string;
  /** The job's request. */
  request: unknown;
  /** The payload's fields besides caller, operation and request. */
  fields?: Record<string, unknown>;
}

/** What a door does its own way around the one model route. */
export interface DoorAdapter {
  /**
   * The job of a valid body: the body's model and the body itself unless the door says
   * otherwise (Anthropic's passed headers; Gemini's model and method of the path).
   */
  jobOf?(request: FastifyRequest, body: ValidBody, endpoint: ModelEndpoint): DoorJob;
  /** The door's stream for a request that streams. */
  eventStream(request: FastifyRequest, body: ValidBody, endpoint: ModelEndpoint): EventStreamFormat;
}

/** Whether a request to `path` streams, by its entry's rule. */
function streams(endpoint: ModelEndpoint, path: string, body: ValidBody): boolean {
  const rule = endpoint.stream;
  if (typeof rule === 'object') return rule.path === path;
  return rule === 'always' || (rule === 'asked' && body.stream === true);
}

/** Runs a request to `path`, one of the entry's paths, through its door. */
export async function relayModelEndpoint(
  request: FastifyRequest, reply: FastifyReply, options: ModelRouteOptions, endpoint: ModelEndpoint, path: string, door: DoorAdapter,
): Promise<unknown> {
  const holder = keyHolderOf(request);
  const valid = parseOrThrow(endpoint.schema, request.body) as ValidBody;
  const capped = cappedForBudget(holder, endpoint, valid);
  const body: ValidBody = capped ?? valid;
  const job = door.jobOf?.(request, body, endpoint) ?? { model: body.model as string, request: body };
  if (endpoint.stream === 'never' && body.stream === true) throw badRequest(`${path} does not stream`, 'stream');
  options.apiKeys.authorizeModel(holder, job.model);
  const caller = callerOf(holder);
  // A request's turns are one conversation by a session header, or by their opening.
  const opening = openingOfOperation[endpoint.operation];
  const conversation = opening && conversationOf({ tokenId: caller.tokenId, model: job.model, headers: request.headers, ...opening(body) });
  const payload = { caller: conversation ? { ...caller, conversation } : caller, operation: endpoint.operation, ...job.fields, request: job.request };
  return relayToWorker(request, reply, {
    ...relayOptionsOf(options),
    queue: endpoint.queue,
    payload: payload as CompletionJobPayload | AudioJobPayload,
    holder,
    worstCase: endpoint.worstCase(body),
    model: job.model,
    stream: streams(endpoint, path, body) ? door.eventStream(request, body, endpoint) : undefined,
    // The schema gave the body back as it came (the entry's `asReceived`), unless it was capped.
    requestJson: endpoint.asReceived && !capped ? request.jsonBytes ?? undefined : undefined,
  });
}

/** What every model route is registered with: the body's limit, and admission before its body is read. */
export const modelRouteOptions = (options: ModelRouteOptions) => ({ bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) });

/**
 * A route for each path of the door's entries, under the door plugin's `/v1` (but an entry
 * served by a route of its own).
 */
export function modelEndpointRoutes(app: FastifyInstance, options: ModelRouteOptions, door: ModelDoor, adapter: DoorAdapter): void {
  for (const endpoint of endpointsOf(door)) {
    if (endpoint.ownRoute) continue;
    for (const path of endpoint.paths) {
      app.post(path.replace(/^\/v1/, ''), modelRouteOptions(options), (request, reply) => relayModelEndpoint(request, reply, options, endpoint, path, adapter));
    }
  }
}
