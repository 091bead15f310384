/**
 * OpenAI's Responses door: `POST /v1/responses`, whole or streamed as the Responses API's named
 * server-sent events. Validated with the wire schema, authorized for the model, its
 * `previous_response_id` and item references made explicit (response-history.ts), then run
 * exactly as a chat completion is: the same admission gate, quota hold, completion queue, relay,
 * request log and charge (`relayToWorker`); the worker translates it through the conversation
 * model for the channel it chooses, or passes it through to a channel whose upstream serves it. A failure after the stream began is a `response.failed`
 * event and an `error` event, numbered on from the last event sent. With `store` (the default)
 * the response and its input are kept for its user before the client has the end of it
 * (response-keeper.ts); with `background` it is answered at once and run by the gateway
 * (background-runs.ts), its stream, if asked for, followed from PostgreSQL (event-follower.ts).
 */
import type { FastifyInstance } from 'fastify';
import { callerOf, cappedForBudget } from '@gateway/admission';
import { conversationOf, responsesOpening } from '@gateway/routing';
import { badRequest, insufficientQuota, modelEndpoints, parseOrThrow, type ResponsesRequest } from '@gateway/contracts';
import { newItemId, responseSkeleton } from '@gateway/providers';
import { orUnavailable, type ResponseStore } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import { relayToWorker } from '../models/model-relay.ts';
import { modelRouteOptions, relayOptionsOf, type ModelRouteOptions } from '../models/model-endpoint-route.ts';
import { responsesEventStream } from './responses-event-stream.ts';
import { followEvents } from './event-follower.ts';
import { continued, type Continued } from './response-history.ts';
import { responseKeeper } from './response-keeper.ts';
import type { BackgroundRuns } from './background-runs.ts';

export interface ResponsesRouteOptions {
  /** Where stored responses are kept; unset without PostgreSQL (then nothing is stored). */
  store?: () => ResponseStore;
  /** This gateway's background responses. */
  background: BackgroundRuns;
  /** What a user's files and stored responses may hold all together (FILE_USER_MAX_BYTES), and how to read what they hold. */
  userMaxBytes: number;
  keptBytes?: (userId: number) => Promise<number>;
}

/** A response to be stored is refused before it runs while its user's stored data is at its cap. */
async function refuseWhenFull(responses: ResponsesRouteOptions, userId: number): Promise<void> {
  const kept = await orUnavailable(responses.keptBytes?.(userId) ?? Promise.resolve(0));
  if (kept >= responses.userMaxBytes) {
    throw insufficientQuota(`this user's files and stored responses hold ${kept} bytes, the most a user may keep (FILE_USER_MAX_BYTES): delete stored responses or files, or send store: false`);
  }
}

/** A background response, checked: stored (so it can be polled, or its stream followed). */
function backgroundStore(body: ResponsesRequest, store: ResponseStore | undefined): ResponseStore {
  if (!store) throw badRequest('background responses are stored: this gateway runs without DATABASE_URL', 'background');
  if (body.store === false) throw badRequest('a background response must be stored: store cannot be false', 'store');
  return store;
}

/** Its schema, worst case and queue are its entry's in the endpoint table. */
const endpoint = modelEndpoints.responses;

export function openaiResponsesRoutes(app: FastifyInstance, options: ModelRouteOptions, responses: ResponsesRouteOptions): void {
  app.post(endpoint.paths[0]!.replace(/^\/v1/, ''), modelRouteOptions(options), async (request, reply) => {
    const holder = keyHolderOf(request);
    parseOrThrow(endpoint.schema, request.body);
    // Validated, then taken as the client wrote it: the schema changes no value, and its keys in
    // the client's order let a channel that passes the request through send it as it came.
    const body = request.body as ResponsesRequest;
    options.apiKeys.authorizeModel(holder, body.model);
    const store = responses.store?.();
    const run = store ? await responses.background.claim(request, holder.userId, store) : undefined;
    // A background run was checked when its client asked for it.
    if (store && body.store !== false && !run) await refuseWhenFull(responses, holder.userId);
    const { request: whole, inputItems, continues }: Continued = run ?? await continued(store, holder.userId, body, options.bodyLimitBytes);
    // A response's turns are one conversation by the key stored with the response it continues,
    // a session header, or their opening; the key is stored with it for the next to continue.
    const caller = callerOf(holder);
    const conversation = conversationOf({ tokenId: caller.tokenId, model: body.model, headers: request.headers, continues, ...responsesOpening(whole) });
    if (body.background === true && !run) {
      const kept = backgroundStore(body, store);
      const queued = { ...responseSkeleton(whole, newItemId('resp'), Math.floor(Date.now() / 1000)), status: 'queued' as const, background: true };
      const streamed = body.stream === true;
      // Its follower's place is taken first: a client refused it (429) has started nothing.
      const place = streamed ? responses.background.followers.take(holder.userId, queued.id) : undefined;
      await kept.save(holder.userId, queued, inputItems, conversation?.key, streamed).catch((error: unknown) => {
        place?.();
        throw error;
      });
      responses.background.start(app, request, kept, { id: queued.id, userId: holder.userId, request: { ...whole, stream: true }, inputItems, continues: conversation?.key, streamed });
      return streamed ? followEvents(reply, kept, queued.id, holder.userId, -1, options.timeoutMs, responses.background.lease, place!) : queued;
    }
    const keeper = responseKeeper(store, body.store !== false, { userId: holder.userId, inputItems, conversation: conversation?.key }, run, request.log);
    const capped = cappedForBudget(holder, endpoint, whole);
    const sent = capped ?? whole;
    return relayToWorker(request, reply, {
      ...relayOptionsOf(options),
      queue: endpoint.queue,
      payload: { caller: conversation ? { ...caller, conversation } : caller, operation: 'responses', request: sent },
      holder,
      worstCase: endpoint.worstCase(sent),
      model: whole.model,
      stream: whole.stream === true ? responsesEventStream(keeper) : undefined,
      // The body as it came, unless a previous response's conversation was put before its input, or it was capped.
      requestJson: sent === body && !run ? request.jsonBytes ?? undefined : undefined,
      settle: keeper.settle,
    });
  });
}
