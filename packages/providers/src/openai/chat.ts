/**
 * Chat completions against an OpenAI-compatible upstream (OpenAI, vLLM, llama.cpp's server,
 * Ollama, Gemini's OpenAI endpoint): the body passed on with the channel's model, the reply and
 * each stream chunk given the client's model name and a complete `usage`.
 */
import { upstreamFailure, type ChatChunk, type ChatRequest, type ChatResponse } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { asObject, normalizeUsage, rejectErrorBody, openaiUpstreamRequest } from './complete.ts';

/** The upstream's reply as the client sees it: its model name, `object`, and full usage. */
export function fromUpstreamChat(raw: unknown, requestedModel: string): ChatResponse {
  const body = asObject(raw, 'reply');
  rejectErrorBody(body);
  if (!Array.isArray(body.choices)) throw upstreamFailure.protocol('the upstream reply has no choices');
  return {
    ...body,
    id: typeof body.id === 'string' ? body.id : `chatcmpl-${Date.now().toString(36)}`,
    object: 'chat.completion',
    created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
    model: requestedModel,
    choices: body.choices as ChatResponse['choices'],
    usage: normalizeUsage(body.usage as Parameters<typeof normalizeUsage>[0]),
  };
}

/** A stream chunk as the client sees it; `usage` kept only on the chunk that carries it. */
export function fromUpstreamChatChunk(raw: unknown, requestedModel: string): ChatChunk {
  const body = asObject(raw, 'stream chunk');
  rejectErrorBody(body);
  const chunk: ChatChunk = {
    ...body,
    id: typeof body.id === 'string' ? body.id : '',
    object: 'chat.completion.chunk',
    created: typeof body.created === 'number' ? body.created : Math.floor(Date.now() / 1000),
    model: requestedModel,
    choices: Array.isArray(body.choices) ? (body.choices as ChatChunk['choices']) : [],
  };
  if (body.usage) chunk.usage = normalizeUsage(body.usage as Parameters<typeof normalizeUsage>[0]);
  else delete chunk.usage;
  return chunk;
}

/** `POST /v1/chat/completions`, whole or streamed: a stream ends with `data: [DONE]`. */
export const chat: OperationMapping<ChatRequest, ChatResponse, ChatChunk> = {
  toUpstream: openaiUpstreamRequest,
  fromReply: (raw, request) => fromUpstreamChat(raw, request.model),
  fromEvent: (raw, request) => fromUpstreamChatChunk(raw, request.model),
  streamEnd: { name: '[DONE]', isMarker: (data) => data.trim() === '[DONE]' },
};
