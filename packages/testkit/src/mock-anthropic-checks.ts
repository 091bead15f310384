/**
 * What Anthropic's Messages API refuses before it answers, with its error type and a message
 * like its own: a missing key (401), a missing or unknown anthropic-version, and the request
 * rules a translation from OpenAI's format most easily breaks (400), thinking's budget among them. A mock that took them would
 * let a gateway bug through that the real API catches.
 */
import type { IncomingHttpHeaders } from 'node:http';

export interface Refusal {
  status: number;
  type: string;
  message: string;
}

/** The versions the API takes; 2026-10-21 refuses the sampling fields. */
const VERSIONS = new Set(['2023-01-01', '2023-06-01', '2026-10-21']);
const SAMPLING_FIELDS = ['temperature', 'top_p', 'top_k'];

const invalid = (message: string): Refusal => ({ status: 400, type: 'invalid_request_error', message });

type Block = { type?: unknown; text?: unknown; id?: unknown; tool_use_id?: unknown };
type Message = { role?: unknown; content?: unknown };

/** The key in `x-api-key`, or as a bearer token (how the 1.x SDKs send it). */
export function apiKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const key = headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? '');
  return bearer?.[1];
}

export function refusalOf(headers: IncomingHttpHeaders, body: Record<string, unknown>): Refusal | undefined {
  if (!apiKeyOf(headers)) return { status: 401, type: 'authentication_error', message: 'x-api-key header is required' };
  const version = headers['anthropic-version'];
  if (typeof version !== 'string' || !version) return invalid('anthropic-version: header is required');
  if (!VERSIONS.has(version)) return invalid(`anthropic-version: unknown version "${version}"`);
  if (typeof body.model !== 'string' || !body.model) return invalid('model: Field required');
  if (!Number.isInteger(body.max_tokens) || (body.max_tokens as number) < 1) return invalid('max_tokens: Field required (an integer of at least 1)');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return invalid('messages: at least one message is required');
  if (version === '2026-10-21') {
    const sampling = SAMPLING_FIELDS.find((field) => field in body);
    if (sampling) return invalid(`${sampling}: Extra inputs are not permitted`);
  }
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) return invalid('temperature: Input should be between 0 and 1');
  if (Array.isArray(body.stop_sequences) && body.stop_sequences.some((s) => typeof s !== 'string' || s.trim() === '')) {
    return invalid('stop_sequences: each stop sequence must contain non-whitespace');
  }
  const thinking = thinkingProblem(body);
  if (thinking) return thinking;
  // The mid-conversation-system beta lets a turn of role 'system' stand between the others.
  const midSystem = String(headers['anthropic-beta'] ?? '').split(',').some((beta) => beta.trim().startsWith('mid-conversation-system'));
  const messages = (body.messages as Message[]).filter((message) => !(midSystem && message?.role === 'system'));
  return systemProblem(body.system) ?? messagesProblem(messages);
}

/**
 * Extended thinking as Anthropic takes it: a budget of at least 1024 tokens and below
 * `max_tokens` (which counts the thinking), and no temperature but 1.
 */
function thinkingProblem(body: Record<string, unknown>): Refusal | undefined {
  const thinking = body.thinking as { type?: unknown; budget_tokens?: unknown } | undefined;
  if (thinking?.type !== 'enabled') return undefined;
  const budget = thinking.budget_tokens;
  if (!Number.isInteger(budget) || (budget as number) < 1024) return invalid('thinking.enabled.budget_tokens: Input should be greater than or equal to 1024');
  if ((budget as number) >= (body.max_tokens as number)) {
    return invalid('`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size');
  }
  if (body.temperature !== undefined && body.temperature !== 1) return invalid('`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode');
  return undefined;
}

function systemProblem(system: unknown): Refusal | undefined {
  if (system === undefined || typeof system === 'string') return undefined;
  if (!Array.isArray(system) || system.some((block: Block) => block?.type !== 'text' || typeof block.text !== 'string')) {
    return invalid('system: Input should be a string or a list of text blocks');
  }
  return undefined;
}

/**
 * Roles, non-empty content, and tool results that answer the tool uses of the turn just before
 * (and every tool use answered when a user turn follows). Consecutive turns of one role are
 * taken, as the API joins them.
 */
function messagesProblem(messages: Message[]): Refusal | undefined {
  let pendingToolUses: string[] = [];
  for (const [at, message] of messages.entries()) {
    if (message?.role !== 'user' && message?.role !== 'assistant') return invalid(`messages.${at}.role: Input should be 'user' or 'assistant'`);
    const blocks: Block[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? message.content : [];
    const last = at === messages.length - 1;
    if (blocks.length === 0 && !(last && message.role === 'assistant')) return invalid(`messages.${at}: all messages must have non-empty content except for the optional final assistant message`);
    const emptyText = blocks.findIndex((block) => block.type === 'text' && (typeof block.text !== 'string' || block.text === ''));
    if (emptyText >= 0 && !(last && message.role === 'assistant')) return invalid(`messages.${at}.content.${emptyText}.text: text content blocks must be non-empty`);
    if (message.role === 'user') {
      const answered = blocks.filter((block) => block.type === 'tool_result').map((block) => String(block.tool_use_id));
      const unexpected = answered.find((id) => !pendingToolUses.includes(id));
      if (unexpected) return invalid(`messages.${at}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`);
      const unanswered = pendingToolUses.filter((id) => !answered.includes(id));
      if (unanswered.length > 0) return invalid(`messages.${at - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`);
      pendingToolUses = [];
    } else {
      for (const block of blocks) if (block.type === 'tool_use') pendingToolUses.push(String(block.id));
    }
  }
  return undefined;
}
