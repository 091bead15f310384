/**
 * OpenAI's Responses door: `POST /v1/responses`, whole or streamed as the Responses API's named
 * server-sent events. Validated with the wire schema, authorized for the model, then run exactly
 * as a chat completion is: the same admission gate, quota hold, completion queue, relay, request
 * log and charge (`relayModelJob`); the worker translates it through the conversation model for
 * the channel it chooses. A failure after the stream began is a `response.failed` event and an
 * `error` event, numbered on from the last event sent.
 */
import type { FastifyInstance } from 'fastify';
import { callerOf } from '@gateway/admission';
import { parseOrThrow, QueueName, responsesRequestSchema, responsesWorstCase, type GatewayError } from '@gateway/contracts';
import { keyHolderOf } from '../auth/request-auth.ts';
import { openaiFormat } from '../error-formats.ts';
import { admissionGate, relayModelJob, type EventStreamFormat } from '../model-relay.ts';
import { relayOptionsOf, type ModelApiOptions } from '../plugins/model-api-options.ts';

/** The event's name and number from its JSON, whose `type` and `sequence_number` come first (the encoder writes them so). */
const EVENT_HEAD = /^\{"type":"([a-z_.]+)","sequence_number":(\d+)/;

/**
 * One request's stream: `event: <type>` and `data: <json>` per event. It remembers the response
 * the stream announced and the last number sent, for the events of a failure after them.
 */
export function responsesEventStream(): EventStreamFormat {
  let next = 0;
  let announced: Record<string, unknown> | undefined;
  return {
    chunk: (data) => {
      const head = EVENT_HEAD.exec(data);
      if (head) next = Number(head[2]) + 1;
      if (head?.[1] === 'response.created') announced = (JSON.parse(data) as { response: Record<string, unknown> }).response;
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

export function openaiResponsesRoutes(app: FastifyInstance, options: ModelApiOptions): void {
  app.post('/responses', { bodyLimit: options.bodyLimitBytes, onRequest: admissionGate(options) }, async (request, reply) => {
    const holder = keyHolderOf(request);
    const body = parseOrThrow(responsesRequestSchema, request.body);
    options.apiKeys.authorizeModel(holder, body.model);
    return relayModelJob(request, reply, {
      ...relayOptionsOf(options),
      queue: QueueName.completion,
      payload: { caller: callerOf(holder), operation: 'responses', request: body },
      holder,
      worstCase: responsesWorstCase(body),
      stream: body.stream === true ? responsesEventStream() : undefined,
      requestJson: request.jsonBytes ?? undefined,
    });
  });
}
