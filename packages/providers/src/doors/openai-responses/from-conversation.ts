/**
 * A conversation reply as a Responses object (see door.ts): thinking as a `reasoning` item (its
 * text the summary, its signature the `encrypted_content`, so a later turn replays it), the text
 * as one `message` item with `output_text`, each tool use as a `function_call` item (a custom
 * tool's as a `custom_tool_call` with its string input). The ids are the gateway's own (`resp_…`,
 * `msg_…`, `fc_…`, `ctc_…`, `rs_…`): a stored response is found by them.
 */
import { randomBytes } from 'node:crypto';
import {
  promptTokensOf,
  withCacheWrites,
  type ConversationPart,
  type ConversationReply,
  type ConversationUsage,
  type ResponsesOutputItem,
  type ResponsesRequest,
  type ResponsesResponse,
  type ResponsesUsage,
} from '@gateway/contracts';
import { callShapes, type CallShape } from './offered-tools.ts';

export const newItemId = (prefix: 'resp' | 'msg' | 'fc' | 'ctc' | 'rs') => `${prefix}_${randomBytes(16).toString('hex')}`;

export function responsesUsageOf(usage: Partial<ConversationUsage>): ResponsesUsage {
  const input = promptTokensOf({ inputTokens: usage.inputTokens ?? 0, outputTokens: 0, ...usage });
  const output = usage.outputTokens ?? 0;
  const wire: ResponsesUsage = {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens ?? 0 },
    total_tokens: input + output,
  };
  // Responses has no field for cache writes: carried beside the wire's, for the charge and the log.
  return withCacheWrites(wire, usage.cacheWriteTokens);
}

export const messageItem = (id: string, text: string, status = 'completed'): ResponsesOutputItem => ({
  id, type: 'message', status, role: 'assistant', content: status === 'completed' ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [],
});

/** A custom tool's call: the string its function's `input` argument held. */
export const customToolCallItem = (id: string, callId: string, name: string, input: string, status = 'completed', namespace?: string): ResponsesOutputItem => ({
  id, type: 'custom_tool_call', status, call_id: callId, ...(namespace === undefined ? {} : { namespace }), name, input,
});

/** A custom tool's input from its function's arguments (JSON), the raw text where they are no `{input}`. */
export function customInput(args: string | Record<string, unknown>): string {
  let value: unknown = args;
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args);
    } catch {
      return args;
    }
  }
  const input = (value as { input?: unknown } | null)?.input;
  return typeof input === 'string' ? input : typeof args === 'string' ? args : JSON.stringify(args);
}

export const functionCallItem = (id: string, callId: string, name: string, args: string, status = 'completed', namespace?: string): ResponsesOutputItem => ({
  id, type: 'function_call', status, call_id: callId, ...(namespace === undefined ? {} : { namespace }), name, arguments: args,
});

export const reasoningItem = (id: string, text: string, signature?: string): ResponsesOutputItem => ({
  id, type: 'reasoning', summary: text ? [{ type: 'summary_text', text }] : [], ...(signature ? { encrypted_content: signature } : {}),
});

function outputOf(parts: ConversationPart[], shapes: Map<string, CallShape>): ResponsesOutputItem[] {
  const output: ResponsesOutputItem[] = [];
  let text: string[] | undefined;
  for (const part of parts) {
    if (part.type === 'text') {
      if (!text) {
        text = [];
        output.push(messageItem(newItemId('msg'), ''));
      }
      text.push(part.text);
      (output.at(-1)!.content as { text: string }[])[0]!.text = text.join('');
      continue;
    }
    text = undefined;
    const shape = part.type === 'tool_use' ? shapes.get(part.name) : undefined;
    if (part.type === 'tool_use' && shape?.custom) output.push(customToolCallItem(newItemId('ctc'), part.id, part.name, customInput(part.input), 'completed', shape.namespace));
    else if (part.type === 'tool_use') output.push(functionCallItem(newItemId('fc'), part.id, part.name, JSON.stringify(part.input), 'completed', shape?.namespace));
    else if (part.type === 'thinking') output.push(reasoningItem(newItemId('rs'), part.thinking, part.signature));
    else if (part.type === 'redacted_thinking') output.push(reasoningItem(newItemId('rs'), '', part.data));
  }
  return output;
}

/** The request's settings as the reply echoes them, and the reply's fields before it has any output. */
export function responseSkeleton(request: ResponsesRequest, id: string, createdAt: number): ResponsesResponse {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: request.background ?? false,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: request.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: request.store ?? true,
    temperature: request.temperature ?? 1,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    usage: null,
    user: request.user ?? null,
  };
}

/** The reply's end: completed, or incomplete where the output limit cut it. */
export function finished(response: ResponsesResponse, output: ResponsesOutputItem[], stopReason: string, usage: Partial<ConversationUsage>): ResponsesResponse {
  const cut = stopReason === 'max_tokens';
  return {
    ...response,
    status: cut ? 'incomplete' : 'completed',
    incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
    output,
    usage: responsesUsageOf(usage),
  };
}

export function conversationToResponse(reply: ConversationReply, request: ResponsesRequest): ResponsesResponse {
  const skeleton = responseSkeleton(request, newItemId('resp'), Math.floor(Date.now() / 1000));
  return finished(skeleton, outputOf(reply.parts, callShapes(request)), reply.stopReason, reply.usage);
}
