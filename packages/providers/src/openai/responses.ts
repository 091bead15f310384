/**
 * OpenAI's Responses door on an `openai` channel whose upstream serves `/v1/responses` (the
 * channel's `responses_api`): passed through untranslated, so hosted tools, `include`,
 * `truncation` and every field the gateway does not know reach the upstream as the client sent
 * them, and its events come back as it sent them. Only the model is the channel's, and the
 * reply's and each event's model the client's. `background` stays behind: the gateway runs a
 * background response itself (its own queues, its own store), the upstream answers it at once.
 * So does `previous_response_id`: the ids are the gateway's, and the input carries the history.
 *
 * A failure the upstream reports inside its answer (a 200 whose response `failed`, a stream's
 * `error` or `response.failed` event) is an `UpstreamError`, so a failure before the first event
 * is failed over, and one after it is the gateway's own `response.failed` and `error` events.
 */
import { UpstreamError, upstreamFailure, type ResponsesRequest, type ResponsesResponse, type ResponsesStreamEvent } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { asObject } from './complete.ts';

const NO_USAGE = { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 };

function failure(error: unknown, what: string): UpstreamError {
  const detail = (typeof error === 'object' && error !== null ? error : {}) as { message?: unknown; code?: unknown };
  const message = typeof detail.message === 'string' ? detail.message : 'unknown';
  return upstreamFailure.http(502, `upstream ${what}: ${message}`, { body: { error: detail } });
}

/** The response as the client sees it: its own model name. */
function asClients(raw: unknown, request: ResponsesRequest): ResponsesResponse {
  return { ...asObject(raw, 'response'), model: request.model } as ResponsesResponse;
}

export const responses: OperationMapping<ResponsesRequest, ResponsesResponse, ResponsesStreamEvent> = {
  toUpstream: (request, upstreamModel, stream) => {
    // The input already holds the conversation a previous_response_id continues (the gateway
    // rebuilt it from its own store): sent too, the upstream would bill the history twice, or 404
    // on an id it never issued.
    const { background: _runByTheGateway, previous_response_id: _rebuilt, ...sent } = request;
    // `stream` as the client wrote it, unless the gateway streams what the client did not ask to (a background run).
    return { ...sent, model: upstreamModel, ...(stream || sent.stream !== undefined ? { stream } : {}) };
  },
  fromReply: (raw, request) => {
    const body = asObject(raw, 'reply');
    if (body.error && body.object !== 'response') throw failure(body.error, 'error');
    if (body.object !== 'response' || !Array.isArray(body.output)) throw upstreamFailure.protocol('the upstream reply is not a response (no output)');
    if (body.status === 'failed') throw failure(body.error, 'response failed');
    // Zero usage where the upstream gave none: the worker then charges its estimate.
    return { ...asClients(body, request), usage: (body.usage as ResponsesResponse['usage']) ?? NO_USAGE };
  },
  fromEvent: (raw, request) => {
    const { type, sequence_number: seq, ...rest } = asObject(raw, 'stream event');
    if (typeof type !== 'string' || typeof seq !== 'number') throw upstreamFailure.protocol('the upstream sent a stream event without a type or sequence_number');
    if (type === 'error') throw failure(rest.error ?? rest, 'error event');
    if (type === 'response.failed') throw failure((rest.response as { error?: unknown } | undefined)?.error, 'response failed');
    // `type` and `sequence_number` first: the door writes them as the event's name and number from the start of its JSON.
    const event: ResponsesStreamEvent = { type, sequence_number: seq, ...rest };
    if (typeof rest.response === 'object' && rest.response !== null) event.response = asClients(rest.response, request);
    return event;
  },
  streamEnd: { name: 'response.completed', isLast: (event) => event.type === 'response.completed' || event.type === 'response.incomplete' },
};
