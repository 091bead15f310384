/**
 * Conversation events as the Responses stream, in the order the `openai` SDK and Codex parse:
 * `response.created`, `response.in_progress`, then for each output item
 * `response.output_item.added`, its parts and deltas (`response.content_part.added`,
 * `response.output_text.delta`… `.done`, `response.content_part.done` for a message;
 * `response.function_call_arguments.delta`… `.done` for a call; the summary's
 * `response.reasoning_summary_*` for reasoning) and `response.output_item.done`, then
 * `response.completed` (or `response.incomplete`) with the whole response and its usage. Every
 * event carries its `sequence_number`, from 0. An item opens when the kind of delta changes: the
 * conversation's events carry no items (see stream.ts).
 */
import type { ConversationEvent, ConversationUsage, ResponsesOutputItem, ResponsesRequest, ResponsesResponse, ResponsesStreamEvent, StopReason } from '@gateway/contracts';
import type { DoorStreamEncoder } from '../door.ts';
import { customInput, customToolCallItem, finished, functionCallItem, messageItem, newItemId, reasoningItem, responseSkeleton } from './from-conversation.ts';
import { callShapes } from './offered-tools.ts';

type Open =
  | { kind: 'text'; id: string; text: string }
  | { kind: 'reasoning'; id: string; text: string; signature: string }
  | { kind: 'tool'; id: string; call: number; callId: string; name: string; args: string; custom: boolean; namespace?: string };

export function responsesEncoder(request: ResponsesRequest): DoorStreamEncoder<ResponsesStreamEvent> {
  const response: ResponsesResponse = responseSkeleton(request, newItemId('resp'), Math.floor(Date.now() / 1000));
  const output: ResponsesOutputItem[] = [];
  const shapes = callShapes(request);
  let sequence = 0;
  let started = false;
  let open: Open | undefined;
  let stopReason: StopReason | undefined;
  let usage: Partial<ConversationUsage> = {};
  let ended = false;

  const event = (type: string, fields: Record<string, unknown>): ResponsesStreamEvent => ({ type, sequence_number: sequence++, ...fields });
  const start = (): ResponsesStreamEvent[] => {
    if (started) return [];
    started = true;
    return [event('response.created', { response }), event('response.in_progress', { response })];
  };
  const at = () => ({ item_id: open!.id, output_index: output.length });

  const close = (): ResponsesStreamEvent[] => {
    if (!open) return [];
    const was = open;
    const place = at();
    const events: ResponsesStreamEvent[] = [];
    let item: ResponsesOutputItem;
    if (was.kind === 'text') {
      const part = { type: 'output_text', text: was.text, annotations: [] };
      events.push(event('response.output_text.done', { ...place, content_index: 0, text: was.text, logprobs: [] }), event('response.content_part.done', { ...place, content_index: 0, part }));
      item = messageItem(was.id, was.text);
    } else if (was.kind === 'reasoning') {
      if (was.text) {
        const part = { type: 'summary_text', text: was.text };
        events.push(event('response.reasoning_summary_text.done', { ...place, summary_index: 0, text: was.text }), event('response.reasoning_summary_part.done', { ...place, summary_index: 0, part }));
      }
      item = reasoningItem(was.id, was.text, was.signature || undefined);
    } else if (was.custom) {
      // A custom tool's input is a string inside the function's JSON arguments: given whole once they are complete.
      const input = customInput(was.args || '{}');
      events.push(event('response.custom_tool_call_input.delta', { ...place, delta: input }), event('response.custom_tool_call_input.done', { ...place, input }));
      item = customToolCallItem(was.id, was.callId, was.name, input, 'completed', was.namespace);
    } else {
      const args = was.args || '{}';
      events.push(event('response.function_call_arguments.done', { ...place, name: was.name, arguments: args }));
      item = functionCallItem(was.id, was.callId, was.name, args, 'completed', was.namespace);
    }
    events.push(event('response.output_item.done', { output_index: place.output_index, item }));
    output.push(item);
    open = undefined;
    return events;
  };

  const openItem = (next: Open): ResponsesStreamEvent[] => {
    const events = [...start(), ...close()];
    open = next;
    const place = at();
    if (next.kind === 'text') {
      events.push(
        event('response.output_item.added', { output_index: place.output_index, item: messageItem(next.id, '', 'in_progress') }),
        event('response.content_part.added', { ...place, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
      );
    } else if (next.kind === 'reasoning') {
      events.push(event('response.output_item.added', { output_index: place.output_index, item: reasoningItem(next.id, '') }));
    } else {
      const item = next.custom ? customToolCallItem(next.id, next.callId, next.name, '', 'in_progress', next.namespace) : functionCallItem(next.id, next.callId, next.name, '', 'in_progress', next.namespace);
      events.push(event('response.output_item.added', { output_index: place.output_index, item }));
    }
    return events;
  };

  const end = (): ResponsesStreamEvent[] => {
    if (ended) return [];
    ended = true;
    const events = [...start(), ...close()];
    const whole = finished(response, output, stopReason ?? 'end_turn', usage);
    events.push(event(whole.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: whole }));
    return events;
  };

  return {
    write(next: ConversationEvent): ResponsesStreamEvent[] {
      if (ended) return [];
      switch (next.type) {
        case 'start':
          usage = { ...usage, ...next.usage };
          return start();
        case 'text-delta': {
          if (next.text === '') return start();
          const events = open?.kind === 'text' ? [] : openItem({ kind: 'text', id: newItemId('msg'), text: '' });
          (open as Extract<Open, { kind: 'text' }>).text += next.text;
          events.push(event('response.output_text.delta', { ...at(), content_index: 0, delta: next.text, logprobs: [] }));
          return events;
        }
        case 'thinking-delta': {
          const events = open?.kind === 'reasoning' ? [] : openItem({ kind: 'reasoning', id: newItemId('rs'), text: '', signature: '' });
          const reasoning = open as Extract<Open, { kind: 'reasoning' }>;
          if (reasoning.text === '') events.push(event('response.reasoning_summary_part.added', { ...at(), summary_index: 0, part: { type: 'summary_text', text: '' } }));
          reasoning.text += next.thinking;
          events.push(event('response.reasoning_summary_text.delta', { ...at(), summary_index: 0, delta: next.thinking }));
          return events;
        }
        case 'signature':
          if (open?.kind === 'reasoning') open.signature += next.signature;
          return [];
        case 'tool-call-start': {
          const shape = shapes.get(next.name);
          const custom = shape?.custom ?? false;
          return openItem({ kind: 'tool', id: newItemId(custom ? 'ctc' : 'fc'), call: next.call, callId: next.id, name: next.name, args: '', custom, namespace: shape?.namespace });
        }
        case 'tool-args-delta':
          // Arguments of a call other than the open one (interleaved calls) are not written: the open one's only.
          if (open?.kind !== 'tool' || open.call !== next.call || next.json === '') return [];
          open.args += next.json;
          return open.custom ? [] : [event('response.function_call_arguments.delta', { ...at(), delta: next.json })];
        case 'stop':
          stopReason = next.stopReason;
          return close();
        case 'usage':
          usage = { ...usage, ...next.usage };
          return stopReason ? end() : [];
      }
    },
    finish: end,
  };
}
