/**
 * The one piece that calls an operation of any provider, whole or streamed: the URL, headers and
 * body from the provider's definition, the HTTP from `upstream-request.ts`, the reply and each
 * stream event mapped back, and every failure an `UpstreamError` in the provider's reading.
 * What a successful reply says goes to the client as the upstream wrote it, fields unknown to
 * the wire format too, so the channel's key is taken out of its strings first, in every form an
 * upstream may reflect it in (the router does the same, and more, for a failure's).
 */
import { replySecretForms, UpstreamError, upstreamFailure, withoutReflectedSecret } from '@gateway/contracts';
import type { OutgoingRequest, ProviderOperation, UpstreamTarget } from './provider.ts';
import { streamDecoders } from './stream-decoders.ts';
import { openUpstreamStream, postUpstreamJson, type OpenUpstreamReply, type UpstreamRequest } from './upstream-request.ts';

/** The URL of an operation for a channel and model. */
export function operationUrl(operation: ProviderOperation<unknown, unknown, unknown>, baseUrl: string, upstreamModel: string, stream: boolean): string {
  return operation.api.baseUrl(baseUrl) + operation.endpoint(upstreamModel, stream);
}

/** One call, answered whole. */
export async function callUpstream<Request, Reply, Event>(chosen: ProviderOperation<Request, Reply, Event>, target: UpstreamTarget, request: Request): Promise<Reply> {
  const operation = forTheModel(chosen, target);
  try {
    const raw = await postUpstreamJson(await upstreamRequest(operation, target, request, false), replySecretForms(target.key));
    return operation.mapping.fromReply(raw, request);
  } catch (error) {
    throw providerFailure(operation, error, target.key);
  }
}

/**
 * One call as a stream of events. Resolves once the upstream accepted the request (a refusal
 * rejects here, before anything reached the client, so the router may fail over); the events
 * then come as the upstream sends them.
 */
export async function streamUpstream<Request, Reply, Event>(
  chosen: ProviderOperation<Request, Reply, Event>,
  target: UpstreamTarget,
  request: Request,
): Promise<AsyncGenerator<Event>> {
  const operation = forTheModel(chosen, target);
  let reply: OpenUpstreamReply;
  try {
    reply = await openUpstreamStream(await upstreamRequest(operation, target, request, true));
  } catch (error) {
    throw providerFailure(operation, error, target.key);
  }
  return events(operation, reply, request, target.key);
}

/** Audio an upstream is sending: its Content-Type as the upstream labelled it, and its bytes as they come. */
export interface UpstreamAudio {
  contentType?: string;
  bytes: AsyncGenerator<Buffer>;
}

/**
 * One call whose reply is audio bytes (`replies: 'audio'`): resolves once the upstream accepted
 * it; the bytes then come as the upstream sends them. A body cut short is a broken connection.
 */
export async function streamUpstreamAudio<Request>(chosen: ProviderOperation<Request, unknown, unknown>, target: UpstreamTarget, request: Request): Promise<UpstreamAudio> {
  const operation = forTheModel(chosen, target);
  let reply: OpenUpstreamReply;
  try {
    reply = await openUpstreamStream(await upstreamRequest(operation, target, request, false));
  } catch (error) {
    throw providerFailure(operation, error, target.key);
  }
  return { contentType: reply.contentType, bytes: audioBytes(operation, reply, target.key) };
}

/** The operation for the target's model, where the provider's wire format depends on it (`forModel`). */
function forTheModel<Request, Reply, Event>(operation: ProviderOperation<Request, Reply, Event>, target: UpstreamTarget): ProviderOperation<Request, Reply, Event> {
  return operation.forModel ? operation.forModel(target.upstreamModel) : operation;
}

async function* audioBytes(operation: ProviderOperation<unknown, unknown, unknown>, reply: OpenUpstreamReply, key: string): AsyncGenerator<Buffer> {
  let finished = false;
  try {
    for await (const chunk of reply.body) yield chunk as Buffer;
    finished = true;
  } catch (error) {
    throw providerFailure(operation, reply.failure(error), key);
  } finally {
    if (!finished) reply.body.destroy();
  }
}

/**
 * The request as the provider sends it: built here, then signed or changed by the provider's
 * `prepare` with the channel's credential. A credential it cannot read rejects here, before
 * anything is sent.
 */
async function upstreamRequest<Request>(operation: ProviderOperation<Request, unknown, unknown>, target: UpstreamTarget, request: Request, stream: boolean): Promise<UpstreamRequest> {
  const outgoing: OutgoingRequest = {
    method: 'POST',
    url: operationUrl(operation, target.channel.base_url, target.upstreamModel, stream),
    headers: {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      ...passedHeaders(operation.api.clientHeaders, target.clientHeaders),
    },
    body: JSON.stringify(operation.mapping.toUpstream(request, target.upstreamModel, stream)),
  };
  const prepared = await operation.api.prepare(outgoing, target.key, stream);
  return { ...prepared, timeoutMs: target.timeoutMs, signal: target.signal };
}

/** The channel key's forms (replySecretForms) are taken out of each event's strings before it is read. */
async function* events<Request, Event>(operation: ProviderOperation<Request, unknown, Event>, reply: OpenUpstreamReply, request: Request, key: string): AsyncGenerator<Event> {
  const { fromEvent, streamEnd } = operation.mapping;
  const keyForms = replySecretForms(key);
  let finished = false;
  const state: Record<string, unknown> = {};
  try {
    for await (const data of streamDecoders[operation.api.streamEncoding](reply.body)) {
      if (streamEnd.isMarker?.(data)) {
        finished = true;
        break;
      }
      const mapped = fromEvent(withoutReflectedSecret(parseEvent(data), data, keyForms), request, state);
      for (const event of mapped === undefined ? [] : Array.isArray(mapped) ? mapped : [mapped]) {
        if (streamEnd.isLast?.(event)) finished = true;
        yield event;
      }
    }
    if (!finished) throw upstreamFailure.connection(`the upstream stream ended before ${streamEnd.name}`);
    if (operation.mapping.finish) yield* operation.mapping.finish(request, state);
  } catch (error) {
    throw providerFailure(operation, reply.failure(error), key);
  } finally {
    // A complete stream's connection goes back to the pool; any other is closed.
    if (finished) reply.body.resume();
    else reply.body.destroy();
  }
}

/** The client headers a provider takes, of those its door handed on. */
function passedHeaders(names: readonly string[] | undefined, given: Record<string, string> | undefined): Record<string, string> {
  const passed: Record<string, string> = {};
  if (!names || !given) return passed;
  for (const name of names) if (typeof given[name] === 'string') passed[name] = given[name];
  return passed;
}

function parseEvent(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw upstreamFailure.protocol('the upstream sent a stream event that is not JSON', { cause: error });
  }
}

function providerFailure(operation: ProviderOperation<unknown, unknown, unknown>, error: unknown, key: string): unknown {
  return error instanceof UpstreamError && operation.api.failure ? operation.api.failure(error, key) : error;
}
