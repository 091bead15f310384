/**
 * What the mock Anthropic upstream answers, as the Messages API does: a reply planned from the
 * request (text, perhaps a tool use, a stop reason, token counts), then sent whole as a
 * `message` or as the stream of events Anthropic sends for it. Tokens are counted as a quarter
 * of the characters, rounded up: input over all the request's text, output over the reply's
 * text and tool input.
 */

export interface MockToolUse {
  name: string;
  input: Record<string, unknown>;
}

export interface PlannedReply {
  id: string;
  model: string;
  text: string;
  toolUse?: MockToolUse & { id: string };
  stopReason: 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use';
  stopSequence: string | null;
  inputTokens: number;
  outputTokens: number;
  /** Extended thinking, when the request asked for it: the thought and its signature. */
  thinking?: { text: string; signature: string };
  /** Prompt tokens read from and written to the prompt cache, outside `inputTokens` (`MockPromptCache`). */
  cache?: { read: number; written: number };
}

export interface ReplyWishes {
  text?: string | ((prompt: string) => string);
  /** A tool call, or a function of the request that decides one (undefined: none). */
  toolUse?: MockToolUse | ((request: Record<string, unknown>) => MockToolUse | undefined);
}

export const DEFAULT_REPLY = 'Hello! This is a mock reply from Claude.';
const TOOL_PREAMBLE = 'Let me look that up for you.';
/** What the mock's model thinks when a request turns extended thinking on. */
export const THOUGHT = 'The user asked something; I will answer briefly.';
/** What the mock's model passes to a tool it decides to call on its own (asked about the weather). */
const WEATHER_INPUT = { location: 'San Francisco, CA', unit: 'celsius' };

export const tokens = (text: string) => Math.ceil(text.length / 4);

type Block = { type?: string; text?: string; content?: unknown; input?: unknown };

/** Every text the request holds: system, text blocks, tool inputs and results. */
export function requestText(body: Record<string, unknown>): string {
  const parts: string[] = [];
  const collect = (content: unknown) => {
    if (typeof content === 'string') return void parts.push(content);
    if (!Array.isArray(content)) return;
    for (const block of content as Block[]) {
      if (block?.type === 'text' && typeof block.text === 'string') parts.push(block.text);
      else if (block?.type === 'tool_result') collect(block.content);
      else if (block?.type === 'tool_use') parts.push(JSON.stringify(block.input ?? {}));
    }
  };
  collect(body.system);
  for (const message of body.messages as { content?: unknown }[]) collect(message.content);
  return parts.join('');
}

/** The text of the last user turn's own text blocks (not of tool results, so a tool's answer never calls the tool again). */
function lastUserText(messages: { role?: string; content?: unknown }[]): string {
  const last = messages.findLast((message) => message.role === 'user');
  if (typeof last?.content === 'string') return last.content;
  return ((last?.content ?? []) as Block[]).filter((block) => block?.type === 'text').map((block) => block.text).join(' ');
}

/** The tool the model calls: as scripted, as `tool_choice` forces, or when asked about the weather. */
function chosenToolUse(body: Record<string, unknown>, prompt: string, scripted: ReplyWishes['toolUse']): MockToolUse | undefined {
  const tools = Array.isArray(body.tools) ? (body.tools as { name?: string }[]) : [];
  const choice = body.tool_choice as { type?: string; name?: string } | undefined;
  if (typeof scripted === 'function') return scripted(body);
  if (scripted) return scripted;
  if (tools.length === 0 || choice?.type === 'none') return undefined;
  const forced = choice?.type === 'any' || choice?.type === 'tool';
  if (!forced && !/\bweather\b/i.test(prompt)) return undefined;
  return { name: choice?.type === 'tool' ? String(choice.name) : String(tools[0]!.name), input: WEATHER_INPUT };
}

export function planReply(body: Record<string, unknown>, wishes: ReplyWishes, sequence: number): PlannedReply {
  const prompt = lastUserText(body.messages as { role?: string }[]);
  const toolUse = chosenToolUse(body, prompt, wishes.toolUse);
  let text = (typeof wishes.text === 'function' ? wishes.text(prompt) : wishes.text) ?? (toolUse ? TOOL_PREAMBLE : DEFAULT_REPLY);
  let stopReason: PlannedReply['stopReason'] = toolUse ? 'tool_use' : 'end_turn';
  let stopSequence: string | null = null;
  // The reply stops at the first stop sequence it would write, and at max_tokens.
  const stops = Array.isArray(body.stop_sequences) ? (body.stop_sequences as string[]) : [];
  const hit = stops.map((sequence) => ({ sequence, at: text.indexOf(sequence) })).filter((s) => s.at >= 0).sort((a, b) => a.at - b.at)[0];
  if (hit) {
    text = text.slice(0, hit.at);
    stopReason = 'stop_sequence';
    stopSequence = hit.sequence;
  }
  const maxTokens = body.max_tokens as number;
  if (tokens(text) > maxTokens) {
    text = text.slice(0, maxTokens * 4);
    stopReason = 'max_tokens';
  }
  const calls = stopReason === 'tool_use' ? { ...toolUse!, id: `toolu_mock_${sequence}` } : undefined;
  const thinking = (body.thinking as { type?: string } | undefined)?.type === 'enabled' ? { text: THOUGHT, signature: `sig_mock_${sequence}` } : undefined;
  return {
    id: `msg_mock_${sequence}`,
    model: String(body.model),
    text,
    toolUse: calls,
    stopReason,
    stopSequence,
    inputTokens: tokens(requestText(body)),
    outputTokens: tokens(text) + (calls ? tokens(JSON.stringify(calls.input)) : 0) + (thinking ? tokens(thinking.text) : 0),
    ...(thinking ? { thinking } : {}),
  };
}

function contentBlocks(plan: PlannedReply): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (plan.thinking) blocks.push({ type: 'thinking', thinking: plan.thinking.text, signature: plan.thinking.signature });
  if (plan.text || !plan.toolUse) blocks.push({ type: 'text', text: plan.text });
  if (plan.toolUse) blocks.push({ type: 'tool_use', id: plan.toolUse.id, name: plan.toolUse.name, input: plan.toolUse.input });
  return blocks;
}

const usage = (plan: PlannedReply, outputTokens: number) => ({
  input_tokens: plan.inputTokens - (plan.cache?.read ?? 0) - (plan.cache?.written ?? 0),
  cache_creation_input_tokens: plan.cache?.written ?? 0,
  cache_read_input_tokens: plan.cache?.read ?? 0,
  output_tokens: outputTokens,
});

export function wholeMessage(plan: PlannedReply): Record<string, unknown> {
  return {
    id: plan.id,
    type: 'message',
    role: 'assistant',
    model: plan.model,
    content: contentBlocks(plan),
    stop_reason: plan.stopReason,
    stop_sequence: plan.stopSequence,
    usage: usage(plan, plan.outputTokens),
  };
}

/** Pieces as a model streams them: text a word at a time, tool input JSON a few characters at a time. */
const words = (text: string) => text.split(/(?= )/).filter(Boolean);
const jsonPieces = (json: string) => ['', ...(json.match(/[\s\S]{1,8}/g) ?? [])];

/** The events of a streamed reply, in Anthropic's order: a ping after the first block opens. */
export function streamEvents(plan: PlannedReply): Record<string, unknown>[] {
  const events: Record<string, unknown>[] = [
    { type: 'message_start', message: { ...wholeMessage(plan), content: [], stop_reason: null, stop_sequence: null, usage: usage(plan, 1) } },
  ];
  contentBlocks(plan).forEach((block, index) => {
    const tool = block.type === 'tool_use';
    const thought = block.type === 'thinking';
    const start = tool ? { ...block, input: {} } : thought ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' };
    events.push({ type: 'content_block_start', index, content_block: start });
    if (index === 0) events.push({ type: 'ping' });
    const deltas: Record<string, unknown>[] = tool
      ? jsonPieces(JSON.stringify(block.input)).map((partial_json) => ({ type: 'input_json_delta', partial_json }))
      : thought
        ? [...words(block.thinking as string).map((thinking) => ({ type: 'thinking_delta', thinking })), { type: 'signature_delta', signature: block.signature }]
        : words(block.text as string).map((text) => ({ type: 'text_delta', text }));
    for (const delta of deltas) events.push({ type: 'content_block_delta', index, delta });
    events.push({ type: 'content_block_stop', index });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: plan.stopReason, stop_sequence: plan.stopSequence }, usage: { output_tokens: plan.outputTokens } });
  events.push({ type: 'message_stop' });
  return events;
}

/** Anthropic's error type for each status it answers. */
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export const errorTypeOf = (status: number) => ERROR_TYPES[status] ?? 'api_error';

export const errorBody = (type: string, message: string, requestId?: string) => ({ type: 'error', error: { type, message }, ...(requestId ? { request_id: requestId } : {}) });
