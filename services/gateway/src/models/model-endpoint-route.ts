/**
 * The one model route every door's endpoints run through, an entry of the endpoint table
 * (`modelEndpoints`, @gateway/contracts) each: validate the body with the entry's schema, refuse
 * `stream: true` where it does not stream, check the key (authenticated by the door plugin's
 * hook) may use the model, name the request's conversation by its operation's opening, and relay
 * the worker's answer, whole or in the door's event stream (`relayModelJob`: admission, hold,
 * queue, request log and charge). What a door does its own way is its `DoorAdapter`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, endpointsOf, parseOrThrow, type AudioJobPayload, type CompletionJobPayload, type ModelDoor, type ModelEndpoint } from '@gateway/contracts';
import { callerOf } from '@gateway/admission';
import { conversationOf, openingOfOperation } from '@gateway/routing';
import { keyHolderOf } from '../auth/request-auth.ts';
import { relayOptionsOf, type ModelApiOptions } from './model-api-options.ts';
import { admissionGate, relayModelJob, type EventStreamFormat } from './model-relay.ts';

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
  request: FastifyRequest, reply: FastifyReply, options: ModelApiOptions, endpoint: ModelEndpoint, path: string, door: DoorAdapter,
): Promise<unknown> {
  const holder = keyHolderOf(request);
  const body = parseOrThrow(endpoint.schema, request.body) as ValidBody;
  const job = door.jobOf?.(request, body, endpoint) ?? { model: body.model as string, request: body };
  if (endpoint.stream === 'never' && body.stream === true) throw badRequest(`${path} does not stream`, 'stream');
  options.apiKeys.authorizeModel(holder, job.model);
  const caller = callerOf(holder);
  // A request's turns are one conversation by a session header, or by their opening.
  const opening = openingOfOperation[endpoint.operation];
  const conversation = opening && conversationOf({ tokenId: caller.tokenId, model: job.model, headers: request.headers, ...opening(body) });
  const payload = { caller: conversation ? { ...caller, conversation } : caller, operation: endpoint.operation, ...job.fields, request: job.request };
  return relayModelJob(request, reply, {
    ...relayOptionsOf(options),
    queue: endpoint.queue,
    payload: payload as CompletionJobPayload | AudioJobPayload,
    holder,
    worstCase: endpoint.worstCase(body),
    model: job.model,
    stream: streams(endpoint, path, body) ? door.eventStream(request, body, endpoint) : undefined,
    // The schema gave the body back as it came (the entry's `asReceived`).
    requestJson: endpoint.asReceived ? request.jsonBytes ?? undefined : undefined,
  });
}

/** What every model route is registered with: the body's limit, and admission before its body is read. */
export const modelRouteOptions = (options: ModelApiOptions) => ({ bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) });

/**
 * A route for each path of the door's entries, under the door plugin's `/v1` (but an entry
 * served by a route of its own).
 */
export function modelEndpointRoutes(app: FastifyInstance, options: ModelApiOptions, door: ModelDoor, adapter: DoorAdapter): void {
  for (const endpoint of endpointsOf(door)) {
    if (endpoint.ownRoute) continue;
    for (const path of endpoint.paths) {
      app.post(path.replace(/^\/v1/, ''), modelRouteOptions(options), (request, reply) => relayModelEndpoint(request, reply, options, endpoint, path, adapter));
    }
  }
}
