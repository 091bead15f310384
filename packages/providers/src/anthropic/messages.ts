/**
 * Anthropic's Messages door on an `anthropic` channel: passed through untranslated, so
 * `cache_control`, thinking blocks with their signatures and every field of a beta the gateway
 * does not know reach the upstream byte for byte (the client's `anthropic-version` and
 * `anthropic-beta` headers too: `clientHeaders` in api.ts). Only the model is the channel's, and
 * the reply's and each event's model the client's.
 */
import { upstreamFailure, type CountTokensRequest, type MessagesRequest, type MessagesResponse, type MessagesStreamEvent } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { errorInPlaceOfReply } from './error-body.ts';

function asObject(raw: unknown, what: string): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw upstreamFailure.protocol(`the upstream ${what} is not a JSON object`);
  return raw as Record<string, unknown>;
}

export const messages: OperationMapping<MessagesRequest, MessagesResponse, MessagesStreamEvent> = {
  toUpstream: (request, upstreamModel, stream) => ({ ...request, model: upstreamModel, stream }),
  fromReply: (raw, request) => {
    const body = asObject(raw, 'reply');
    if (body.type === 'error') throw errorInPlaceOfReply(body);
    if (!Array.isArray(body.content) || typeof body.usage !== 'object' || body.usage === null) {
      throw upstreamFailure.protocol('the upstream reply is not a message (no content or usage)');
    }
    return { ...body, model: request.model } as MessagesResponse;
  },
  fromEvent: (raw, request) => {
    const event = asObject(raw, 'stream event');
    if (typeof event.type !== 'string') throw upstreamFailure.protocol('the upstream sent a stream event without a type');
    if (event.type === 'error') throw errorInPlaceOfReply(event);
    if (event.type === 'message_start' && typeof event.message === 'object' && event.message !== null) {
      return { type: event.type, ...event, message: { ...event.message, model: request.model } };
    }
    // `type` first, wherever the upstream put it (a spread keeps a key where it was): the door
    // writes it as the event's name from the start of its JSON.
    return { type: event.type, ...event };
  },
  streamEnd: { name: 'message_stop', isLast: (event) => event.type === 'message_stop' },
};

/** `POST /v1/messages/count_tokens`: `{input_tokens}`, never streamed. */
export const countTokens: OperationMapping<CountTokensRequest, { input_tokens: number }, never> = {
  toUpstream: (request, upstreamModel) => ({ ...request, model: upstreamModel }),
  fromReply: (raw) => {
    const body = asObject(raw, 'reply');
    if (body.type === 'error') throw errorInPlaceOfReply(body);
    if (typeof body.input_tokens !== 'number') throw upstreamFailure.protocol('the upstream count has no input_tokens');
    return { ...body, input_tokens: body.input_tokens };
  },
  fromEvent: () => {
    throw upstreamFailure.protocol('count_tokens is not streamed');
  },
  streamEnd: { name: 'the end' },
};
