/**
 * A door (a client wire format) and a provider meet through the conversation model
 * (@gateway/contracts' `conversation/`): a door maps its request to a `ConversationRequest` and a
 * `ConversationReply` and stream of `ConversationEvent`s back to its format; a provider maps a
 * `ConversationRequest` to its API and its reply and events to the model's. `throughConversation`
 * joins one of each into the operation mapping `callUpstream` and `streamUpstream` run, so every
 * door works with every provider that has a conversation mapping.
 */
import type { ConversationEvent, ConversationReply, ConversationRequest } from '@gateway/contracts';
import type { OperationMapping, StreamEnd } from '../provider.ts';

/** How a door's stream is written from conversation events: one encoder a stream. */
export interface DoorStreamEncoder<Event> {
  write(event: ConversationEvent): Event[];
  /** The events that close the stream, once the provider's stream is complete. */
  finish(): Event[];
}

export interface DoorMapping<Request, Reply, Event> {
  toConversation(request: Request): ConversationRequest;
  fromConversation(reply: ConversationReply, request: Request): Reply;
  encoder(request: Request): DoorStreamEncoder<Event>;
  /** The event that completes the door's stream (Anthropic's `message_stop`), for a provider whose stream has no end marker of its own. */
  isLast(event: Event): boolean;
}

export interface ProviderConversation {
  toUpstream(request: ConversationRequest, upstreamModel: string, stream: boolean): unknown;
  fromReply(raw: unknown): ConversationReply;
  /** One upstream stream event as conversation events; `state` is one object a stream. */
  fromEvent(raw: unknown, state: Record<string, unknown>): ConversationEvent[];
  streamEnd: StreamEnd<unknown>;
}

const ENCODER = Symbol('door encoder');

export function throughConversation<Request, Reply, Event>(door: DoorMapping<Request, Reply, Event>, provider: ProviderConversation): OperationMapping<Request, Reply, Event> {
  const encoderOf = (request: Request, state: Record<string | symbol, unknown>) =>
    (state[ENCODER] ??= door.encoder(request)) as DoorStreamEncoder<Event>;
  return {
    toUpstream: (request, upstreamModel, stream) => provider.toUpstream(door.toConversation(request), upstreamModel, stream),
    fromReply: (raw, request) => door.fromConversation(provider.fromReply(raw), request),
    fromEvent: (raw, request, state) => {
      const encoder = encoderOf(request, state);
      return provider.fromEvent(raw, state).flatMap((event) => encoder.write(event));
    },
    finish: (request, state) => encoderOf(request, state).finish(),
    streamEnd: { name: provider.streamEnd.name, isMarker: provider.streamEnd.isMarker, isLast: door.isLast },
  };
}
