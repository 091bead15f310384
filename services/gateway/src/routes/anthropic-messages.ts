/**
 * Anthropic's Messages door: `POST /v1/messages` (whole, or streamed as Anthropic's named
 * server-sent events) and `POST /v1/messages/count_tokens`, one entry each in
 * `anthropicEndpoints` (@gateway/contracts). Validated with the wire schema,
 * authorized for the model, then run exactly as a chat completion is: the same admission gate,
 * quota hold, completion queue, relay, request log and charge (`relayModelJob`). The client's
 * `anthropic-version` and `anthropic-beta` go with the job, for an anthropic channel to receive
 * as they came; a beta the gateway does not know is never refused here.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { callerOf } from '@gateway/admission';
import { conversationOf, messagesOpening } from '@gateway/routing';
import {
  anthropicEndpoints,
  badRequest,
  parseOrThrow,
  type AnthropicEndpoint,
  type ClientHeaders,
  type CompletionJobPayload,
  type GatewayError,
  type MessagesRequest,
} from '@gateway/contracts';
import { keyHolderOf } from '../auth/request-auth.ts';
import { anthropicFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, type EventStreamFormat } from '../model-relay.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';

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
export const messagesEventStream: EventStreamFormat = {
  chunk: (data) => `event: ${eventName(data)}\ndata: ${data}\n\n`,
  end: () => '',
  error: (error: GatewayError) => `event: error\ndata: ${JSON.stringify(anthropicFormat.body(error))}\n\n`,
};

export function anthropicMessagesRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  for (const [path, endpoint] of Object.entries(anthropicEndpoints) as [string, AnthropicEndpoint][]) {
    app.post(path.replace(/^\/v1/, ''), { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
      const holder = keyHolderOf(request);
      const body = parseOrThrow(endpoint.schema, request.body);
      if (body.stream === true && !endpoint.streams) throw badRequest(`${path} does not stream`, 'stream');
      options.apiKeys.authorizeModel(holder, body.model);
      const caller = callerOf(holder);
      // A message's turns are one conversation by Claude Code's session header, or by their opening.
      const conversation = endpoint.operation === 'messages' ? conversationOf({ tokenId: caller.tokenId, model: body.model, headers: request.headers, ...messagesOpening(body as MessagesRequest) }) : undefined;
      const payload = { caller: conversation ? { ...caller, conversation } : caller, operation: endpoint.operation, request: body, clientHeaders: clientHeadersOf(request) } as CompletionJobPayload;
      return relayModelJob(request, reply, {
        ...relayOptionsOf(options),
        queue: endpoint.queue,
        payload,
        holder,
        worstCase: endpoint.worstCase(body),
        stream: body.stream === true ? messagesEventStream : undefined,
        // The schema gives a valid body back as it came (no defaults, no transforms).
        requestJson: request.jsonBytes ?? undefined,
      });
    });
  }
}
