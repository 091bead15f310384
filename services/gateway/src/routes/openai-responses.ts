/**
 * OpenAI's Responses door: `POST /v1/responses`, whole or streamed as the Responses API's named
 * server-sent events. Validated with the wire schema, authorized for the model, its
 * `previous_response_id` and item references made explicit (response-history.ts), then run
 * exactly as a chat completion is: the same admission gate, quota hold, completion queue, relay,
 * request log and charge (`relayModelJob`); the worker translates it through the conversation
 * model for the channel it chooses. A failure after the stream began is a `response.failed`
 * event and an `error` event, numbered on from the last event sent. With `store` (the default)
 * the response and its input are kept for its user before the client has the end of it.
 */
import type { FastifyInstance } from 'fastify';
import { callerOf } from '@gateway/admission';
import { parseOrThrow, QueueName, responsesRequestSchema, responsesWorstCase, type GatewayError, type ResponsesResponse } from '@gateway/contracts';
import type { ResponseStore } from '@gateway/database';
import { keyHolderOf } from '../auth/request-auth.ts';
import { openaiFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, type EventStreamFormat } from '../model-relay.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';
import { continued } from '../responses/response-history.ts';

/** The event's name and number from its JSON, whose `type` and `sequence_number` come first (the encoder writes them so). */
const EVENT_HEAD = /^\{"type":"([a-z_.]+)","sequence_number":(\d+)/;
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete']);

/**
 * One request's stream: `event: <type>` and `data: <json>` per event. It remembers the response
 * the stream announced and the last number sent, for the events of a failure after them, and
 * hands the final response to `keep`.
 */
export function responsesEventStream(keep?: (response: ResponsesResponse) => void): EventStreamFormat {
  let next = 0;
  let announced: Record<string, unknown> | undefined;
  return {
    chunk: (data) => {
      const head = EVENT_HEAD.exec(data);
      if (head) next = Number(head[2]) + 1;
      if (head?.[1] === 'response.created') announced = (JSON.parse(data) as { response: Record<string, unknown> }).response;
      if (keep && head && FINAL_EVENTS.has(head[1]!)) keep((JSON.parse(data) as { response: ResponsesResponse }).response);
      return `event: ${head?.[1] ?? 'message'}\ndata: ${data}\n\n`;
    },
    end: () => '',
    error: (error: GatewayError) => {
      const detail = (openaiFormat.body(error) as { error: { type: string; code: unknown; message: string; param: unknown } }).error;
      const failed = announced
        ? `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: next++, response: { ...announced, status: 'failed', error: { code: detail.code ?? detail.type, message: detail.message } } })}\n\n`
        : '';
      return `${failed}event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: next++, error: detail })}\n\n`;
    },
  };
}

export interface ResponsesRouteOptions {
  /** Where stored responses are kept; unset without PostgreSQL (then nothing is stored). */
  store?: () => ResponseStore;
}

export function openaiResponsesRoutes(app: FastifyInstance, options: ModelApiOptions, responses: ResponsesRouteOptions): void {
  app.post('/responses', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
    const holder = keyHolderOf(request);
    const body = parseOrThrow(responsesRequestSchema, request.body);
    options.apiKeys.authorizeModel(holder, body.model);
    const store = responses.store?.();
    const { request: whole, inputItems } = await continued(store, holder.userId, body);
    let final: ResponsesResponse | undefined;
    const keeps = store !== undefined && body.store !== false;
    const settle = keeps
      ? async (json?: string) => {
        const response = json === undefined ? final : (JSON.parse(json) as ResponsesResponse);
        if (response) await store.save(holder.userId, response, inputItems);
      }
      : undefined;
    return relayModelJob(request, reply, {
      ...relayOptionsOf(options),
      queue: QueueName.completion,
      payload: { caller: callerOf(holder), operation: 'responses', request: whole },
      holder,
      worstCase: responsesWorstCase(whole),
      stream: body.stream === true ? responsesEventStream((response) => { final = response; }) : undefined,
      // The body as it came, unless a previous response's conversation was put before its input.
      requestJson: whole === body ? request.jsonBytes ?? undefined : undefined,
      settle,
    });
  });
}
