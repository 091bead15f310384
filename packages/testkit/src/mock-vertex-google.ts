/**
 * Google's models on the mock Vertex AI: `:generateContent` and `:streamGenerateContent?alt=sse`
 * in Gemini's format (the Gemini mock's text model, and its tone for a body asking for audio),
 * and `:predict` for text embeddings.
 */
import { createHash, randomUUID } from 'node:crypto';
import { asksForSpeech, GEMINI_PCM_MIME_TYPE, geminiChatRequest, geminiError, toBadRequest, type GeminiChatRequest } from '@gateway/contracts';
import { mockSpeech, sinePcm } from './mock-gemini-speech.ts';
import { textEvents } from './mock-gemini-text.ts';
import { writeOrWait } from './mock-stream-writing.ts';
import type { MockExchange } from './mock-wire-format.ts';

/** A Gemini model's answer: `text` when it is a string, else an echo; speech for a body asking for audio. */
export async function generate({ request, res, fail }: MockExchange, model: string, text: unknown, streamed: boolean): Promise<void> {
  const body = request.json ?? {};
  let events: Record<string, unknown>[];
  if (asksForSpeech(body)) events = [speechEvent(body, model)];
  else {
    const parsed = geminiChatRequest.safeParse(body);
    if (!parsed.success) return fail(400, geminiError(400, toBadRequest(parsed.error).message));
    events = textEvents(parsed.data as GeminiChatRequest, model, { text: typeof text === 'string' ? text : null, cachedTokens: 0 }, streamed, randomUUID().replaceAll('-', '').slice(0, 22));
  }
  if (!streamed) return void res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(events[0]));
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) await writeOrWait(res, `data: ${JSON.stringify(event)}\r\n\r\n`);
  res.end();
}

/** The Gemini mock's tone for the text, in one event: Vertex answers speech as Gemini does. */
function speechEvent(body: Record<string, unknown>, model: string): Record<string, unknown> {
  const contents = (body.contents ?? []) as { parts?: { text?: unknown }[] }[];
  const text = contents.flatMap((c) => c.parts ?? []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  const speech = mockSpeech(text);
  return {
    candidates: [{ content: { role: 'model', parts: [{ inlineData: { mimeType: GEMINI_PCM_MIME_TYPE, data: sinePcm(speech.pcmBytes).toString('base64') } }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: speech.promptTokenCount, candidatesTokenCount: speech.candidatesTokenCount, totalTokenCount: speech.promptTokenCount + speech.candidatesTokenCount },
    modelVersion: model,
  };
}

/** `:predict` for a text embedding model: a vector a text, the same for the same text. */
export function predict({ request, res, fail }: MockExchange, model: string): void {
  const body = request.json ?? {};
  const instances = body.instances as { content?: unknown }[] | undefined;
  if (!Array.isArray(instances) || instances.length === 0 || instances.some((i) => typeof i?.content !== 'string')) {
    return fail(400, geminiError(400, 'Invalid JSON payload: instances must be a list of {"content": string}.'));
  }
  if (/gemini-embedding/.test(model) && instances.length > 1) return fail(400, geminiError(400, `Model ${model} supports only one instance per request.`));
  const asked = (body.parameters as { outputDimensionality?: unknown } | undefined)?.outputDimensionality;
  const dimensions = typeof asked === 'number' ? asked : 8;
  const predictions = instances.map(({ content }) => {
    const digest = createHash('sha256').update(content as string).digest();
    return { embeddings: { values: Array.from({ length: dimensions }, (_, d) => (digest[d % digest.length]! - 127.5) / 127.5), statistics: { token_count: Math.ceil((content as string).length / 4), truncated: false } } };
  });
  res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify({ predictions }));
}
