/**
 * Anthropic's door on the one model route (`model-endpoint-route.ts`): `POST /v1/messages` and
 * `/v1/messages/count_tokens` are run exactly as a chat completion is. The client's
 * `anthropic-version` and `anthropic-beta` go with the job, for an anthropic channel to receive
 * as they came (a beta the gateway does not know is never refused here), and a message streams
 * as Anthropic's named server-sent events.
 */
import type { FastifyRequest } from 'fastify';
import type { ClientHeaders, GatewayError } from '@gateway/contracts';
import { anthropicFormat } from '../http/error-formats.ts';
import type { EventStreamFormat } from './model-relay.ts';
import type { DoorAdapter } from './model-endpoint-route.ts';

const PASSED_HEADERS = ['anthropic-version', 'anthropic-beta'] as const;

function clientHeadersOf(request: FastifyRequest): ClientHeaders | undefined {
  const headers: ClientHeaders = {};
  for (const name of PASSED_HEADERS) {
    const value = request.headers[name];
    // Repeated headers are one list, as HTTP joins them.
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  return Object.keys(headers).length > 0 ? headers : undefined;
}

/** The event's name from its JSON, whose `type` comes first (each mapping writes it so). */
const eventName = (data: string) => /^\{"type":"([a-z_]+)"/.exec(data)?.[1] ?? 'message';

/** Anthropic's stream: `event: <type>` and `data: <json>` per event; a failure after the first is an `error` event. */
const messagesEventStream: EventStreamFormat = {
  chunk: (data) => `event: ${eventName(data)}\ndata: ${data}\n\n`,
  end: () => '',
  error: (error: GatewayError) => `event: error\ndata: ${JSON.stringify(anthropicFormat.body(error))}\n\n`,
};

export const anthropicDoor: DoorAdapter = {
  jobOf: (request, body) => ({ model: body.model as string, request: body, fields: { clientHeaders: clientHeadersOf(request) } }),
  eventStream: () => messagesEventStream,
};
