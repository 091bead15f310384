/**
 * The one conversation model every door maps to and every provider maps from (DESIGN.md, "The
 * surface"): a model request as the gateway understands it, whatever wire format it came in.
 * A door is then one pair of mappings (its format to and from this one, whole and streamed) and a
 * provider one pair, and every door works with every provider. Where a door meets a provider of
 * its own format the request passes through untranslated instead, so nothing is lost.
 */

/** A prompt-cache breakpoint on a part (Anthropic's `cache_control`). */
export interface CacheMark {
  type: 'ephemeral';
  /** How long the cached prefix lives ("5m", "1h"), when the client said. */
  ttl?: string;
}

export type MediaSource =
  | { kind: 'base64'; mediaType: string; data: string }
  | { kind: 'url'; url: string }
  | { kind: 'text'; mediaType: string; data: string };

export interface TextPart { type: 'text'; text: string; cache?: CacheMark }
export interface ImagePart { type: 'image'; source: MediaSource; cache?: CacheMark }
export interface DocumentPart { type: 'document'; source: MediaSource; title?: string; cache?: CacheMark }
export interface ToolUsePart { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; cache?: CacheMark }
export interface ToolResultPart { type: 'tool_result'; toolUseId: string; content: (TextPart | ImagePart)[]; isError?: boolean; cache?: CacheMark }
/** The model's reasoning, with the provider's signature that lets it be replayed to that provider. */
export interface ThinkingPart { type: 'thinking'; thinking: string; signature?: string }
/** Reasoning the provider keeps encrypted: replayed as it came, never read. */
export interface RedactedThinkingPart { type: 'redacted_thinking'; data: string }

export type ConversationPart = TextPart | ImagePart | DocumentPart | ToolUsePart | ToolResultPart | ThinkingPart | RedactedThinkingPart;

export interface ConversationMessage {
  /** 'system': an instruction mid-conversation (at the start, it is `system`). */
  role: 'user' | 'assistant' | 'system';
  parts: ConversationPart[];
}

export interface ConversationTool {
  name: string;
  description?: string;
  /** The JSON schema of the tool's input. */
  inputSchema: Record<string, unknown>;
  cache?: CacheMark;
}

export type ConversationToolChoice =
  | { type: 'auto' | 'any' | 'none'; parallel?: boolean }
  | { type: 'tool'; name: string; parallel?: boolean };

export type ResponseFormat = { type: 'text' } | { type: 'json'; name?: string; schema?: Record<string, unknown> };

export interface ConversationRequest {
  /** The model the client named. */
  model: string;
  system: TextPart[];
  messages: ConversationMessage[];
  tools?: ConversationTool[];
  toolChoice?: ConversationToolChoice;
  maxOutputTokens?: number;
  stopSequences?: string[];
  temperature?: number;
  topP?: number;
  topK?: number;
  responseFormat?: ResponseFormat;
  /** Reasoning asked for, with the most tokens it may take. */
  thinking?: { budgetTokens?: number };
  /** Reasoning effort as OpenAI names it (Responses' `reasoning.effort`, chat's `reasoning_effort`). */
  reasoningEffort?: 'minimal' | 'low' | 'medium' | 'high';
  /** The end user, for the provider's abuse reports (Anthropic's `metadata.user_id`, OpenAI's `user`). */
  user?: string;
  stream: boolean;
}
