/**
 * The conversation model (see doors/door.ts) on Bedrock's Converse API: system parts become
 * `system` blocks, turns `messages` of content blocks (text, image and document bytes with
 * distinct names as `converse-media.ts` makes them, toolUse, toolResult, reasoningContent), cache
 * marks `cachePoint` blocks after the part they close, tools `toolConfig`; the reply's blocks and
 * ConverseStream's events (`{"contentBlockDelta": …}`, as `aws-event-stream.ts` gives them)
 * become the model's parts and events, with the cache reads and writes of its usage.
 *
 * By rule, as the Anthropic mapping: `maxTokens` is CHAT_DEFAULT_MAX_TOKENS where the door set
 * none; thinking (a budget, an effort, or adaptive) asks Claude's through
 * `additionalModelRequestFields`, with a budget that fits `maxTokens` (`claude-thinking.ts`, the
 * rule Anthropic's and Vertex's Claude share) and without a temperature;
 * a JSON response format is an instruction appended to the system prompt; thinking without a
 * signature (another provider's) is left out. Dropped: `topK` and `user` (no Converse
 * field for every model), a tool choice of `none` (Converse has none: the tools stay offered).
 * Refused with a 400: media by URL (Converse takes bytes or S3 locations only).
 */
import { randomUUID } from 'node:crypto';
import { CHAT_DEFAULT_MAX_TOKENS, upstreamFailure, type ConversationEvent, type ConversationPart, type ConversationReply, type ConversationRequest, type ConversationUsage, type StopReason } from '@gateway/contracts';
import type { ProviderConversation } from '../doors/door.ts';
import { claudeThinking } from '../claude-thinking.ts';
import { documentBlock, DocumentNames, imageBlock } from './converse-media.ts';

type Block = Record<string, unknown>;

const CACHE_POINT: Block = { cachePoint: { type: 'default' } };

function blocksOf(part: ConversationPart, path: string, names: DocumentNames): Block[] {
  const block = ((): Block | undefined => {
    switch (part.type) {
      case 'text':
        return part.text === '' ? undefined : { text: part.text };
      case 'image':
        return imageBlock(part, path);
      case 'document':
        return documentBlock(part, path, names);
      case 'tool_use':
        return { toolUse: { toolUseId: part.id, name: part.name, input: part.input } };
      case 'tool_result':
        return { toolResult: { toolUseId: part.toolUseId, content: part.content.flatMap((inner, i) => blocksOf(inner, `${path}.content[${i}]`, names)), status: part.isError ? 'error' : 'success' } };
      case 'thinking':
        return part.signature ? { reasoningContent: { reasoningText: { text: part.thinking, signature: part.signature } } } : undefined;
      case 'redacted_thinking':
        return { reasoningContent: { redactedContent: part.data } };
    }
  })();
  if (!block) return [];
  return 'cache' in part && part.cache ? [block, CACHE_POINT] : [block];
}

const isTurn = (message: ConversationRequest['messages'][number]) => message.role === 'user' || message.role === 'assistant';
function jsonInstruction(format: ConversationRequest['responseFormat']): Block | undefined {
  if (format?.type !== 'json') return undefined;
  if (!format.schema) return { text: 'Respond with one valid JSON object and nothing else: no prose, no code fences.' };
  return { text: `Respond with one valid JSON value and nothing else (no prose, no code fences) that matches this JSON Schema, named "${format.name ?? 'reply'}":\n${JSON.stringify(format.schema)}` };
}

function toConverse(request: ConversationRequest): Block {
  const maxTokens = request.maxOutputTokens ?? CHAT_DEFAULT_MAX_TOKENS;
  const names = new DocumentNames();
  const messages = request.messages
    .map((message, at) => ({ message, at }))
    .filter(({ message }) => isTurn(message))
    .map(({ message, at }) => ({ role: message.role, content: message.parts.flatMap((part, i) => blocksOf(part, `messages[${at}].content[${i}]`, names)) }))
    .filter((message) => message.content.length > 0);
  const body: Block = { messages };
  // An instruction mid-conversation (a door's system turn) joins the system prompt: Converse has no system turns.
  const instructions = [...request.system, ...request.messages.filter((message) => !isTurn(message)).flatMap((message) => message.parts)];
  const system = [...instructions.flatMap((part, i) => blocksOf(part, `system[${i}]`, names)), ...[jsonInstruction(request.responseFormat)].filter((block): block is Block => block !== undefined)];
  if (system.length > 0) body.system = system;
  const inference: Block = { maxTokens };
  const thinking = claudeThinking(request, maxTokens);
  if (thinking) body.additionalModelRequestFields = { thinking };
  else if (request.temperature !== undefined) inference.temperature = Math.min(request.temperature, 1);
  else if (request.topP !== undefined) inference.topP = request.topP;
  const stops = request.stopSequences?.filter((stop) => stop.trim() !== '') ?? [];
  if (stops.length > 0) inference.stopSequences = stops;
  body.inferenceConfig = inference;
  if (request.tools?.length) {
    const tools: Block[] = request.tools.flatMap((tool) => {
      const spec = { toolSpec: { name: tool.name, ...(tool.description ? { description: tool.description } : {}), inputSchema: { json: tool.inputSchema } } };
      return tool.cache ? [spec, CACHE_POINT] : [spec];
    });
    const choice = request.toolChoice;
    const toolChoice = choice?.type === 'tool' ? { tool: { name: choice.name } } : choice?.type === 'any' ? { any: {} } : choice?.type === 'auto' ? { auto: {} } : undefined;
    body.toolConfig = { tools, ...(toolChoice ? { toolChoice } : {}) };
  }
  return body;
}

interface ConverseUsage { inputTokens?: number; outputTokens?: number; cacheReadInputTokens?: number; cacheWriteInputTokens?: number }

function usageOf(usage: ConverseUsage | undefined): ConversationUsage {
  return {
    inputTokens: usage?.inputTokens ?? 0,
    outputTokens: usage?.outputTokens ?? 0,
    ...(typeof usage?.cacheReadInputTokens === 'number' ? { cacheReadTokens: usage.cacheReadInputTokens } : {}),
    ...(typeof usage?.cacheWriteInputTokens === 'number' ? { cacheWriteTokens: usage.cacheWriteInputTokens } : {}),
  };
}

const STOP_REASONS: Record<string, StopReason> = {
  end_turn: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens', stop_sequence: 'stop_sequence',
  guardrail_intervened: 'refusal', content_filtered: 'refusal', model_context_window_exceeded: 'max_tokens',
};
const stopReasonOf = (reason: unknown): StopReason => STOP_REASONS[String(reason)] ?? 'end_turn';

function partOfReply(block: Block): ConversationPart | undefined {
  if (typeof block.text === 'string') return { type: 'text', text: block.text };
  const toolUse = block.toolUse as { toolUseId?: unknown; name?: unknown; input?: unknown } | undefined;
  if (toolUse) return { type: 'tool_use', id: String(toolUse.toolUseId), name: String(toolUse.name), input: (toolUse.input ?? {}) as Record<string, unknown> };
  const reasoning = block.reasoningContent as { reasoningText?: { text?: unknown; signature?: unknown }; redactedContent?: unknown } | undefined;
  if (reasoning?.reasoningText) {
    const { text, signature } = reasoning.reasoningText;
    return { type: 'thinking', thinking: String(text ?? ''), ...(typeof signature === 'string' ? { signature } : {}) };
  }
  if (typeof reasoning?.redactedContent === 'string') return { type: 'redacted_thinking', data: reasoning.redactedContent };
  return undefined;
}

function fromConverse(raw: unknown): ConversationReply {
  const body = raw as { output?: { message?: { content?: unknown } }; stopReason?: unknown; usage?: ConverseUsage } | null;
  const content = body?.output?.message?.content;
  if (!Array.isArray(content)) throw upstreamFailure.protocol('the upstream reply is not a Converse reply (no output.message.content)');
  const parts = (content as Block[]).map(partOfReply).filter((part): part is ConversationPart => part !== undefined);
  return { id: `bedrock-${randomUUID()}`, parts, stopReason: stopReasonOf(body?.stopReason), usage: usageOf(body?.usage) };
}

interface StreamState { calls?: Map<number, number>; stopReason?: StopReason }

/** One ConverseStream event: its stop is held until `metadata` brings the usage, and both go together. */
function fromStreamEvent(raw: unknown, state: Record<string, unknown>): ConversationEvent[] {
  if (typeof raw !== 'object' || raw === null) throw upstreamFailure.protocol('the upstream sent a stream event that is not an object');
  const [[type, event]] = Object.entries(raw as Record<string, Block & { contentBlockIndex?: number }>) as [string, Block & { contentBlockIndex?: number }][];
  const stream = state as StreamState;
  const calls = (stream.calls ??= new Map());
  switch (type) {
    case 'messageStart':
      return [{ type: 'start', id: `bedrock-${randomUUID()}` }];
    case 'contentBlockStart': {
      const toolUse = (event.start as { toolUse?: { toolUseId?: unknown; name?: unknown } } | undefined)?.toolUse;
      if (!toolUse) return [];
      calls.set(event.contentBlockIndex ?? -1, calls.size);
      return [{ type: 'tool-call-start', call: calls.get(event.contentBlockIndex ?? -1)!, id: String(toolUse.toolUseId), name: String(toolUse.name) }];
    }
    case 'contentBlockDelta': {
      const delta = (event.delta ?? {}) as { text?: unknown; toolUse?: { input?: unknown }; reasoningContent?: { text?: unknown; signature?: unknown } };
      if (typeof delta.text === 'string') return [{ type: 'text-delta', text: delta.text }];
      if (typeof delta.reasoningContent?.text === 'string') return [{ type: 'thinking-delta', thinking: delta.reasoningContent.text }];
      if (typeof delta.reasoningContent?.signature === 'string') return [{ type: 'signature', signature: delta.reasoningContent.signature }];
      const call = calls.get(event.contentBlockIndex ?? -1);
      if (delta.toolUse && call !== undefined) return [{ type: 'tool-args-delta', call, json: String(delta.toolUse.input ?? '') }];
      return [];
    }
    case 'messageStop':
      stream.stopReason = stopReasonOf(event.stopReason);
      return [];
    case 'metadata':
      return [{ type: 'stop', stopReason: stream.stopReason ?? 'end_turn', stopSequence: null }, { type: 'usage', usage: usageOf(event.usage as ConverseUsage) }];
    default:
      return [];
  }
}

export const converseConversation: ProviderConversation = {
  toUpstream: toConverse,
  fromReply: fromConverse,
  fromEvent: fromStreamEvent,
  streamEnd: { name: 'its metadata event' },
};
