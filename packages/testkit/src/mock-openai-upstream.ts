import { sendEvents, sleepUnlessGone, startMockUpstream, writeOrWait, type MockBehaviour, type MockExchange, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';
import { planChat, planCompletion, planEmbeddings, type ReplyOptions } from './mock-openai-replies.ts';
import { speak } from './mock-openai-speech.ts';
import { answerResponses } from './mock-openai-responses.ts';
import type { SpeechFormat } from '@gateway/contracts';

/** What the mock does with a request. Unset fields fall back to a quick, correct answer. */
export interface MockOpenAIBehaviour extends MockBehaviour {
  /** A stream whose first event never ends: data without a blank line, until the caller leaves. */
  endlessEvent?: boolean;
  /** A stream waits this long between chunks. */
  chunkDelayMs?: number;
  /** A stream breaks its connection after sending this many chunks. */
  breakAfterChunks?: number;
  /** The completion text, or a function of the prompt (split into one chunk per word when streamed). */
  text?: string | ((prompt: string) => string);
  /** A chat reply calls this tool (when the request offers tools) instead of answering in text, or the one a function of the request decides. */
  toolCall?: ReplyOptions['toolCall'];
  /** Words (a token each) as the request's output limit allows, this many without one (`ReplyOptions.wordsWithoutLimit`). */
  wordsWithoutLimit?: number;
  /** Leave `usage` out of the reply (and the stream's usage chunk). */
  omitUsage?: boolean;
  /** A stream's usage chunk comes this long after its last text chunk. */
  usageDelayMs?: number;
  /** Fields added to the reply's `usage` (and a stream's usage chunk), as `prompt_tokens_details` an upstream reports. */
  usageFields?: Record<string, unknown>;
  /** Embeddings in this format whatever `encoding_format` asked, as a server that ignores the field. */
  embeddingFormat?: 'float' | 'base64';
  /** Speech in this format (and its Content-Type) whatever `response_format` asked, as an upstream that ignores the field. */
  speechFormat?: SpeechFormat;
  /** Speech answered with this Content-Type, whatever format the audio is in. */
  speechContentType?: string;
  /** Embeddings whose JSON is padded to at least this many bytes (a reply past the gateway's limit). */
  embeddingPadBytes?: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** The body's bytes as they came (a body passed through is compared byte for byte). */
  raw: string;
  at: number;
  /** What a Responses reply sent back: its JSON, or its stream's text (`event:`/`data:` blocks). */
  reply?: string;
}

export type MockOpenAIUpstream = MockUpstream<MockOpenAIBehaviour, RecordedRequest>;

/** The operations it speaks. */
const SERVED = new Set(['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/audio/speech', '/v1/responses']);

/**
 * A real HTTP server speaking the OpenAI wire format (`POST /v1/completions`,
 * `/v1/chat/completions` and `/v1/responses`, whole or streamed with usage, `/v1/embeddings` and `/v1/audio/speech`), which a test can make slow, fail, rate-limit or hang, and
 * which counts what it saw.
 */
export function startMockOpenAIUpstream(initial: MockOpenAIBehaviour = {}): Promise<MockOpenAIUpstream> {
  return startMockUpstream(openaiWireFormat, initial);
}

/** Each request's record, for a Responses answer to note what it sent back. */
const recordOf = new WeakMap<ReceivedRequest, RecordedRequest>();

const openaiError = (message: string, type: string, code: string | null = null) => ({ error: { message, type, param: null, code } });

/** OpenAI's wire format on the shared mock: its routes, its error bodies, its answers. */
export const openaiWireFormat: MockWireFormat<MockOpenAIBehaviour, RecordedRequest> = {
  name: 'mock upstream',
  record(r) {
    const recorded: RecordedRequest = { method: r.method, path: r.path, authorization: r.headers.authorization, body: r.json ?? {}, raw: r.raw, at: r.at };
    recordOf.set(r, recorded);
    return recorded;
  },
  invalidJson: () => openaiError('invalid JSON', 'invalid_request_error'),
  check: (r) => (r.method !== 'POST' || !SERVED.has(r.path) ? { status: 404, body: openaiError(`no route ${r.method} ${r.path}`, 'invalid_request_error') } : undefined),
  failureBody: (status) => openaiError(`mock failure ${status}`, 'server_error'),
  overLimitBody: () => openaiError('Rate limit reached: too many requests in flight', 'requests', 'rate_limit_exceeded'),
  answer: (exchange, b) => answerOpenAI(exchange, b, exchange.request.path),
};

/**
 * An OpenAI-format answer to `operationPath` (`/v1/chat/completions`, …): whole, or streamed
 * with usage and `[DONE]`; shared by every mock whose upstream answers in OpenAI's format.
 */
export async function answerOpenAI(exchange: MockExchange, b: MockOpenAIBehaviour, operationPath: string): Promise<void> {
  const { res, request, gone } = exchange;
  const body = request.json ?? {};
  if (b.endlessEvent) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"choices":[{"text":"');
    const filler = 'x'.repeat(64 * 1024);
    while (!gone.aborted) {
      if (!res.write(filler)) await new Promise<void>((resolve) => { res.once('drain', resolve); gone.addEventListener('abort', () => resolve(), { once: true }); });
    }
    return;
  }
  if (operationPath === '/v1/audio/speech') return speak(res, body, gone, { format: b.speechFormat, contentType: b.speechContentType });
  if (operationPath === '/v1/responses') {
    const record = recordOf.get(request);
    const reply = await answerResponses(res, body, { text: typeof b.text === 'string' ? b.text : undefined, usageFields: b.usageFields, chunkDelayMs: b.chunkDelayMs }, gone);
    if (record) record.reply = reply;
    return;
  }
  const plan = operationPath === '/v1/chat/completions' ? planChat(body, b) : operationPath === '/v1/embeddings' ? planEmbeddings(body, b) : planCompletion(body, b);
  // The whole reply and the usage chunk share the plan's usage object.
  if (b.usageFields) Object.assign(plan.usage as Record<string, unknown>, b.usageFields);
  if (body.stream !== true || operationPath === '/v1/embeddings') {
    const reply = { ...plan.whole };
    if (b.omitUsage) delete reply.usage;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
    return;
  }
  const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true && !b.omitUsage;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const frame = (chunk: unknown) => `data: ${JSON.stringify(chunk)}\n\n`;
  const chunks = plan.chunks.map((chunk) => frame(includeUsage ? { ...chunk, usage: null } : chunk));
  if (!(await sendEvents(exchange, chunks, { intervalMs: b.chunkDelayMs, breakAfterEvents: b.breakAfterChunks }))) return;
  if (b.chunkDelayMs) await sleepUnlessGone(b.chunkDelayMs, gone);
  if (includeUsage) {
    if (b.usageDelayMs) await sleepUnlessGone(b.usageDelayMs, gone);
    if (gone.aborted) return;
    await writeOrWait(res, frame(plan.usageChunk));
  }
  res.end('data: [DONE]\n\n');
}
