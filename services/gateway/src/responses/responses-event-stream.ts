/**
 * The Responses API's stream as server-sent events: `event: <type>` and `data: <json>` per
 * event. A failure after the first event is a `response.failed` event and an `error` event,
 * numbered on from the last event sent; the failed response is handed to the keeper.
 */
import type { GatewayError, ResponsesResponse } from '@gateway/contracts';
import { openaiFormat } from '../http/error-formats.ts';
import type { EventStreamFormat } from '../models/model-relay.ts';
import type { ResponseKeeper } from './response-keeper.ts';

/** The event's name and number from its JSON, whose `type` and `sequence_number` come first (the encoder writes them so). */
export const EVENT_HEAD = /^\{"type":"([a-z_.]+)","sequence_number":(\d+)/;
const FINAL_EVENTS = new Set(['response.completed', 'response.incomplete']);

/**
 * One request's stream: `event: <type>` and `data: <json>` per event. It remembers the response
 * the stream announced and the last number sent, for the events of a failure after them, and
 * hands each event's passing and the final response to its keeper (response-keeper.ts).
 */
export function responsesEventStream(keeper?: Pick<ResponseKeeper, 'keep' | 'passed'>): EventStreamFormat {
  let next = 0;
  let announced: Record<string, unknown> | undefined;
  return {
    chunk: (data) => {
      const head = EVENT_HEAD.exec(data);
      keeper?.passed(data, head ? Number(head[2]) : undefined);
      if (head) next = Number(head[2]) + 1;
      if (head?.[1] === 'response.created') announced = (JSON.parse(data) as { response: Record<string, unknown> }).response;
      if (keeper && head && FINAL_EVENTS.has(head[1]!)) keeper.keep((JSON.parse(data) as { response: ResponsesResponse }).response);
      return `event: ${head?.[1] ?? 'message'}\ndata: ${data}\n\n`;
    },
    end: () => '',
    error: (error: GatewayError) => {
      const detail = (openaiFormat.body(error) as { error: { type: string; code: unknown; message: string; param: unknown } }).error;
      const response = announced && { ...announced, status: 'failed', error: { code: detail.code ?? detail.type, message: detail.message } };
      // Kept as it failed: the id the client was given is found, as a background run's is.
      if (response) keeper?.keep(response as unknown as ResponsesResponse);
      const failed = response
        ? `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', sequence_number: next++, response })}\n\n`
        : '';
      return `${failed}event: error\ndata: ${JSON.stringify({ type: 'error', sequence_number: next++, error: detail })}\n\n`;
    },
  };
}
