/**
 * What the mock Gemini upstream answers to a chat request (`generateContent` without a speech
 * config): the text as one model turn, or, when the request offers function declarations and a
 * behaviour's `functionCall` decides one, a call of it; with Gemini's `usageMetadata` (a token
 * a four characters, rounded up). Streamed, a word an event, the last with the finishReason and
 * the usage, as Gemini sends them.
 */
import type { ServerResponse } from 'node:http';

export interface MockGeminiFunctionCall {
  name: string;
  args: Record<string, unknown>;
}

export interface MockGeminiChat {
  /** The reply's text. Default: DEFAULT_GEMINI_CHAT_REPLY. */
  chatText?: string;
  /** Decides a function call from the request (undefined: answer in text). */
  functionCall?: (request: Record<string, unknown>) => MockGeminiFunctionCall | undefined;
}

export const DEFAULT_GEMINI_CHAT_REPLY = 'Hello from the mock Gemini model.';

const tokens = (text: string) => Math.ceil(text.length / 4);

/** A request for speech names a speech config (or audio output); any other is a chat. */
export function isChatRequest(body: unknown): body is Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const record = body as Record<string, unknown>;
  const config = (record.generationConfig ?? record.generation_config ?? {}) as Record<string, unknown>;
  const modalities = (config.responseModalities ?? config.response_modalities ?? []) as unknown[];
  return config.speechConfig === undefined && config.speech_config === undefined && !modalities.includes('AUDIO');
}

export function answerChat(res: ServerResponse, model: string, body: Record<string, unknown>, chat: MockGeminiChat, stream: boolean): void {
  const declared = ((body.tools ?? []) as { functionDeclarations?: unknown[] }[]).some((tool) => (tool.functionDeclarations ?? []).length > 0);
  const call = declared ? chat.functionCall?.(body) : undefined;
  const text = call ? '' : chat.chatText ?? DEFAULT_GEMINI_CHAT_REPLY;
  const prompt = JSON.stringify([body.systemInstruction ?? null, body.contents ?? []]);
  const output = call ? JSON.stringify(call) : text;
  const usageMetadata = { promptTokenCount: tokens(prompt), candidatesTokenCount: tokens(output), totalTokenCount: tokens(prompt) + tokens(output) };
  const envelope = { modelVersion: model, responseId: `mockresp${Date.now().toString(36)}` };
  const candidate = (parts: unknown[], last: boolean) => ({ content: { role: 'model', parts }, ...(last ? { finishReason: 'STOP' } : {}), index: 0 });
  const parts = call ? [{ functionCall: call }] : [{ text }];
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ candidates: [candidate(parts, true)], usageMetadata, ...envelope }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const pieces = call ? [parts] : text.split(/(?= )/).map((word) => [{ text: word }]);
  pieces.forEach((piece, at) => {
    const last = at === pieces.length - 1;
    res.write(`data: ${JSON.stringify({ candidates: [candidate(piece, last)], ...(last ? { usageMetadata } : {}), ...envelope })}\r\n\r\n`);
  });
  res.end();
}
