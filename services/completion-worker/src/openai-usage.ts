/**
 * What each OpenAI operation is charged when its upstream reports no usage (or a stream is cut
 * short): `estimateTokens` (four ASCII characters a token, three quarters of a token a UTF-8 byte
 * of any other character), over the request's prompt and the reply's text. One place for all three operations, so they agree; a
 * chat's prompt is counted by `chatPromptTokens` (@gateway/contracts), beside the hold's count.
 */
import {
  chatPromptTokens,
  embeddingInputs,
  estimatePromptTokens,
  estimateTokens,
  type ChatChunk,
  type ChatRequest,
  type ChatResponse,
  type CompletionChunk,
  type CompletionRequest,
  type CompletionResponse,
  type EmbeddingRequest,
} from '@gateway/contracts';

/** The text of a message's content: a string, or its text parts. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join('');
}

export function embeddingPromptTokens(request: EmbeddingRequest): number {
  return embeddingInputs(request.input).reduce((sum, input) => sum + (typeof input === 'string' ? estimateTokens(input) : input.length), 0);
}

/** The text a chat reply produced: its contents and its tool calls' arguments. */
export function chatReplyText(response: ChatResponse): string {
  let text = '';
  for (const choice of response.choices) {
    text += contentText(choice.message?.content);
    for (const call of choice.message?.tool_calls ?? []) text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  }
  return text;
}

/** The text one stream chunk carries, of either format (`text`, or a chat `delta`). */
export function chunkText(chunk: CompletionChunk | ChatChunk): string {
  let text = '';
  for (const choice of chunk.choices as { text?: string; delta?: ChatChunk['choices'][number]['delta'] }[]) {
    text += choice.text ?? '';
    const delta = choice.delta;
    if (!delta) continue;
    text += typeof delta.content === 'string' ? delta.content : '';
    for (const call of delta.tool_calls ?? []) text += (call.function?.name ?? '') + (call.function?.arguments ?? '');
  }
  return text;
}

/** A completion's usage when the upstream reported none: an echoed prompt is counted once, as prompt. */
export function estimatedCompletionUsage(request: CompletionRequest, response: CompletionResponse): { prompt: number; completion: number } {
  const echoed = request.echo === true && typeof request.prompt === 'string' ? request.prompt : '';
  const text = (c: { text?: string }) => (echoed && c.text?.startsWith(echoed) ? c.text.slice(echoed.length) : c.text ?? '');
  return { prompt: estimatePromptTokens(request.prompt), completion: estimateTokens(response.choices.map(text).join('')) };
}

/**
 * The prompt of a chat or completion, for the estimate of a stream cut short or of a reply refused
 * for its size: what its hold counted as prompt, by the estimate's rule.
 */
export function streamPromptTokens(request: CompletionRequest | ChatRequest): number {
  return 'messages' in request ? chatPromptTokens(request as ChatRequest) : estimatePromptTokens((request as CompletionRequest).prompt);
}
