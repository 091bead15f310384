/**
 * A Gemini upstream on a real HTTP port, for tests and benchmarks: speech generation, a text
 * model (mock-gemini-text.ts: text, function calls, JSON, thoughts, for every body that asks for
 * no audio) and embeddings. It speaks the wire format exactly as Google's `@google/genai` SDK
 * expects it:
 *
 * - `POST /v1beta/models/{model}:generateContent` answers one `GenerateContentResponse`;
 * - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers server-sent events, each
 *   `data: <GenerateContentResponse JSON>\r\n\r\n`, with no `[DONE]` (without `alt=sse`, a JSON
 *   array of the same responses, as Gemini does);
 * - `POST /v1beta/models/{model}:batchEmbedContents` answers `{embeddings: [{values}]}`, one
 *   vector a request (8 floats unless `outputDimensionality`), the same for the same text, and
 *   `:embedContent` `{embedding: {values}}` for its one content;
 * - each under `/v1` too, as Google serves both;
 * - the key comes in the `x-goog-api-key` header; errors are `{"error":{code,message,status}}`.
 *
 * The audio is real: 24 kHz, 16-bit little-endian mono PCM of a 440 Hz tone, base64 in
 * `inlineData` with mimeType `audio/L16;codec=pcm;rate=24000`. Its length follows the text:
 *
 *     characters = code points of all contents[].parts[].text
 *     durationMs = characters × msPerCharacter            (msPerCharacter defaults to 50)
 *     pcmBytes   = durationMs × 48                         (24 samples per ms × 2 bytes)
 *
 * so with the default 2,400 bytes of PCM per character (`mockSpeech` computes it). Usage counts
 * like Gemini's: promptTokenCount = ceil(characters / 4), candidatesTokenCount = ceil(durationMs /
 * 40) (25 audio tokens per second). A fixed `pcmBytes` overrides the formula for memory tests,
 * and a `speak` function (the demo's offline speech synthesizer) replaces the tone with speech.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  asksForSpeech,
  GEMINI_PCM_MIME_TYPE,
  geminiChatRequest,
  geminiError,
  geminiGenerateRequest,
  geminiRequestText,
  toBadRequest,
  type GeminiErrorBody,
  type GeminiChatRequest,
  type GeminiGenerateRequest,
} from '@gateway/contracts';
import { textEvents, type MockGeminiTextBehaviour } from './mock-gemini-text.ts';
import { readBody } from './mock-upstream.ts';

export const MOCK_GEMINI_API_KEY = 'mock-gemini-key';

/** What the mock does with the next requests; every field can change between tests with `set`. */
export interface MockGeminiBehaviour extends MockGeminiTextBehaviour {
  /** Wait this long before answering (for streams: before the first event). Default 0. */
  delayMs: number;
  /** Requests beyond this many at once get 429 RESOURCE_EXHAUSTED. Default unlimited. */
  maxConcurrent: number;
  /** Never answer (until the caller gives up or the mock closes). Default false. */
  hang: boolean;
  /** Milliseconds of audio per character of text. Default 50. */
  msPerCharacter: number;
  /** A fixed PCM size for every reply, whatever the text (base64 is 4/3 of it). Default null. */
  pcmBytes: number | null;
  /** Milliseconds of audio per streamed event. Default 1000. */
  streamChunkMs: number;
  /** Pause between streamed events. Default 0. */
  streamIntervalMs: number;
  /** A stream (of audio or of text) breaks its connection after sending this many events. Default null (never). */
  breakAfterEvents: number | null;
  /** Include safetyRatings in candidates (Gemini's TTS models leave them out). Default false. */
  safetyRatings: boolean;
}

export interface MockGeminiOptions extends Partial<MockGeminiBehaviour> {
  /** The key callers must send in `x-goog-api-key`. Default MOCK_GEMINI_API_KEY. */
  apiKey?: string;
  /**
   * Status for a wrong key: 403 PERMISSION_DENIED by default; 400 reproduces Gemini's own
   * INVALID_ARGUMENT with reason API_KEY_INVALID. A missing key is always 401 UNAUTHENTICATED.
   */
  invalidKeyStatus?: 400 | 401 | 403;
  /** Models served; others get 404 NOT_FOUND. Default: any model. */
  models?: string[];
  /** Port to listen on. Default: a free one. */
  port?: number;
  /** Speaks the text as 24 kHz 16-bit mono PCM, instead of the tone. Default: the tone. */
  speak?: (text: string) => Promise<Buffer>;
}

/** An injected failure: an HTTP status with Gemini's error body, a reset connection, or no answer. */
export type MockGeminiFailure = number | 'reset' | 'hang';

export interface MockGeminiRequest {
  model: string;
  method: 'generateContent' | 'streamGenerateContent' | 'embedContent' | 'batchEmbedContents';
  apiKey: string | undefined;
  /** The parsed JSON body (or the raw text when it was not JSON). */
  body: unknown;
}

export interface MockGeminiStats {
  /** Every request that arrived. */
  requests: number;
  /** Requests being served right now (not counting immediate rejections). */
  inFlight: number;
  /** The most requests served at once. */
  maxInFlight: number;
  /** Successful replies fully sent. */
  completed: number;
  /** Requests whose caller went away before the reply was complete. */
  aborted: number;
  /** Requests refused with 429 because of `maxConcurrent`. */
  rateLimited: number;
  /** Requests answered by an injected failure. */
  failed: number;
}

export interface MockGeminiUpstream {
  /** Base URL, e.g. `http://127.0.0.1:41234` (a channel's base_url). */
  url: string;
  port: number;
  apiKey: string;
  stats: MockGeminiStats;
  /** The last 1,000 requests, oldest first. */
  received: MockGeminiRequest[];
  set(behaviour: Partial<MockGeminiBehaviour>): void;
  /** The next `count` requests that pass authentication fail this way. */
  failNext(count: number, failure: MockGeminiFailure, message?: string): void;
  /** Behaviour back to the start options, failures cleared, stats and log emptied. */
  reset(): void;
  /** Resolves when `predicate` holds, polling; rejects after `timeoutMs`. */
  waitFor(predicate: (mock: MockGeminiUpstream) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_BEHAVIOUR: MockGeminiBehaviour = {
  delayMs: 0,
  maxConcurrent: Number.POSITIVE_INFINITY,
  hang: false,
  msPerCharacter: 50,
  pcmBytes: null,
  streamChunkMs: 1000,
  streamIntervalMs: 0,
  breakAfterEvents: null,
  safetyRatings: false,
  text: null,
  cachedTokens: 0,
};

const SAMPLE_RATE = 24_000;
const BYTES_PER_MS = (SAMPLE_RATE / 1000) * 2;
const RECEIVED_KEPT = 1000;

export interface MockSpeech {
  characters: number;
  durationMs: number;
  pcmBytes: number;
  promptTokenCount: number;
  candidatesTokenCount: number;
}

/** The audio the mock produces for `text` (see the formula at the top of this file). */
export function mockSpeech(text: string, msPerCharacter = DEFAULT_BEHAVIOUR.msPerCharacter, fixedPcmBytes: number | null = null): MockSpeech {
  const characters = [...text].length;
  const pcmBytes = fixedPcmBytes !== null ? fixedPcmBytes - (fixedPcmBytes % 2) : Math.round(characters * msPerCharacter * (BYTES_PER_MS / 2)) * 2;
  const durationMs = pcmBytes / BYTES_PER_MS;
  return {
    characters,
    durationMs,
    pcmBytes,
    promptTokenCount: Math.max(1, Math.ceil(characters / 4)),
    candidatesTokenCount: Math.ceil(durationMs / 40),
  };
}

/** `bytes` of a 440 Hz tone as 16-bit little-endian PCM at 24 kHz. */
export function sinePcm(bytes: number): Buffer {
  const pcm = Buffer.alloc(bytes - (bytes % 2));
  for (let i = 0; i < pcm.length / 2; i++) {
    pcm.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / SAMPLE_RATE) * 8000), i * 2);
  }
  return pcm;
}

/**
 * Tones are cached by length, since a burst of identical 1 MB replies would otherwise spend its
 * time computing sines and the benchmark would measure the mock.
 */
const toneCache = new Map<number, { pcm: Buffer; base64: string }>();
function tone(bytes: number) {
  let cached = toneCache.get(bytes);
  if (!cached) {
    const pcm = sinePcm(bytes);
    cached = { pcm, base64: pcm.toString('base64') };
    if (toneCache.size >= 16) toneCache.delete(toneCache.keys().next().value!);
    toneCache.set(bytes, cached);
  }
  return cached;
}

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'Request contains an invalid argument.',
  401: 'Request is missing required authentication credential.',
  403: 'The caller does not have permission',
  404: 'Requested entity was not found.',
  429: 'Resource has been exhausted (e.g. check quota).',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
  504: 'The request timed out. Please try again.',
};

/** Under `/v1` and `/v1beta`, as Google serves both. */
const ROUTE = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/;

export async function startMockGeminiUpstream(options: MockGeminiOptions = {}): Promise<MockGeminiUpstream> {
  const { apiKey = MOCK_GEMINI_API_KEY, invalidKeyStatus = 403, models, port = 0, speak, ...initial } = options;
  const start = { ...DEFAULT_BEHAVIOUR, ...initial };
  let behaviour = { ...start };
  let failures: { remaining: number; failure: MockGeminiFailure; message?: string }[] = [];
  const emptyStats = (): MockGeminiStats => ({ requests: 0, inFlight: 0, maxInFlight: 0, completed: 0, aborted: 0, rateLimited: 0, failed: 0 });
  const stats = emptyStats();
  const received: MockGeminiRequest[] = [];
  const brokenOnPurpose = new WeakSet<ServerResponse>();

  const sendError = (res: ServerResponse, status: number, message = DEFAULT_MESSAGES[status] ?? `HTTP ${status}`, details?: unknown[]) => {
    const body: GeminiErrorBody = geminiError(status, message, details);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
  };

  const takeFailure = () => {
    const next = failures[0];
    if (!next) return undefined;
    if (--next.remaining <= 0) failures.shift();
    return next;
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.requests++;
    const url = new URL(req.url ?? '/', 'http://mock');
    const route = req.method === 'POST' ? ROUTE.exec(url.pathname) : null;
    const raw = await readBody(req);
    const key = header(req, 'x-goog-api-key');
    let body: unknown = raw;
    try {
      body = JSON.parse(raw);
    } catch {
      /* kept as text, refused below */
    }
    const model = route ? decodeURIComponent(route[1]!) : '';
    const method = (route?.[2] ?? 'generateContent') as MockGeminiRequest['method'];
    if (route) {
      received.push({ model, method, apiKey: key, body });
      if (received.length > RECEIVED_KEPT) received.shift();
    }

    if (key === undefined) {
      return sendError(res, 401, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
    }
    if (key !== apiKey) {
      if (invalidKeyStatus === 400) {
        return sendError(res, 400, 'API key not valid. Please pass a valid API key.', [
          { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
        ]);
      }
      return sendError(res, invalidKeyStatus, invalidKeyStatus === 403 ? 'Permission denied: the API key is not allowed to call this API.' : undefined);
    }
    if (!route) return sendError(res, 404, `The requested URL ${url.pathname} was not found on this server.`);
    if (models && !models.includes(model)) {
      return sendError(res, 404, `models/${model} is not found for API version v1beta, or is not supported for generateContent.`);
    }

    const failure = takeFailure();
    if (failure) {
      stats.failed++;
      if (failure.failure === 'reset') return void req.socket.destroy();
      if (failure.failure !== 'hang') {
        const details =
          failure.failure === 429 ? [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }] : undefined;
        return sendError(res, failure.failure, failure.message, details);
      }
    }
    if (stats.inFlight >= behaviour.maxConcurrent) {
      stats.rateLimited++;
      return sendError(res, 429, 'Resource has been exhausted (e.g. check quota).', [
        { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
      ]);
    }

    if (typeof body === 'string') return sendError(res, 400, `Invalid JSON payload received. ${raw.slice(0, 80)}`);
    if (method === 'batchEmbedContents') return embedBatch(res, model, body, sendError);
    if (method === 'embedContent') return embedBatch(res, model, { requests: [{ model: `models/${model}`, ...(body as object) }] }, sendError, true);
    const speech = asksForSpeech(body);
    const parsed = speech ? geminiGenerateRequest.safeParse(body) : geminiChatRequest.safeParse(body);
    if (!parsed.success) return sendError(res, 400, toBadRequest(parsed.error).message);

    // From here the request counts as served, until the reply ends or the caller leaves.
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    const gone = new AbortController();
    res.once('close', () => {
      stats.inFlight--;
      if (res.writableFinished) stats.completed++;
      else if (brokenOnPurpose.delete(res)) stats.failed++;
      else stats.aborted++;
      gone.abort();
    });

    const snapshot = behaviour;
    if (snapshot.hang || failure?.failure === 'hang') return; // answered by nobody; ends when the caller gives up
    try {
      if (snapshot.delayMs > 0) await sleep(snapshot.delayMs, undefined, { signal: gone.signal });
      const sse = url.searchParams.get('alt') === 'sse';
      if (!speech) return void (await answerText(res, model, parsed.data as GeminiChatRequest, snapshot, method === 'streamGenerateContent', sse, gone.signal));
      const request = parsed.data as GeminiGenerateRequest;
      if (method === 'generateContent') return void (await reply(res, model, request, snapshot));
      await stream(res, model, request, snapshot, sse, gone.signal);
    } catch (error) {
      if (!gone.signal.aborted) throw error;
    }
  }

  async function respond(model: string, request: GeminiGenerateRequest, b: MockGeminiBehaviour) {
    const text = geminiRequestText(request);
    const spoken = speak ? await speak(text) : undefined;
    const speech = mockSpeech(text, b.msPerCharacter, spoken ? spoken.length : b.pcmBytes);
    const pcm = spoken ?? tone(speech.pcmBytes).pcm;
    const usageMetadata = {
      promptTokenCount: speech.promptTokenCount,
      candidatesTokenCount: speech.candidatesTokenCount,
      totalTokenCount: speech.promptTokenCount + speech.candidatesTokenCount,
      promptTokensDetails: [{ modality: 'TEXT', tokenCount: speech.promptTokenCount }],
      candidatesTokensDetails: [{ modality: 'AUDIO', tokenCount: speech.candidatesTokenCount }],
    };
    const candidate = (data: string, last: boolean) => ({
      content: { role: 'model', parts: [{ inlineData: { mimeType: GEMINI_PCM_MIME_TYPE, data } }] },
      ...(last ? { finishReason: 'STOP' } : {}),
      ...(b.safetyRatings ? { safetyRatings: SAFETY_RATINGS } : {}),
      index: 0,
    });
    const envelope = { modelVersion: model, responseId: randomUUID().replaceAll('-', '').slice(0, 22) };
    return { pcm, usageMetadata, candidate, envelope };
  }

  async function reply(res: ServerResponse, model: string, request: GeminiGenerateRequest, b: MockGeminiBehaviour) {
    const { pcm, usageMetadata, candidate, envelope } = await respond(model, request, b);
    const base64 = speak ? pcm.toString('base64') : tone(pcm.length).base64;
    const body = JSON.stringify({ candidates: [candidate(base64, true)], usageMetadata, ...envelope });
    res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(body);
  }

  async function stream(res: ServerResponse, model: string, request: GeminiGenerateRequest, b: MockGeminiBehaviour, sse: boolean, signal: AbortSignal) {
    const { pcm, usageMetadata, candidate, envelope } = await respond(model, request, b);
    const step = Math.max(2, Math.round(b.streamChunkMs * (BYTES_PER_MS / 2)) * 2);
    res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8' });
    if (!sse) res.write('[');
    let offset = 0;
    let events = 0;
    do {
      if (b.breakAfterEvents !== null && events++ >= b.breakAfterEvents) {
        brokenOnPurpose.add(res);
        return void res.destroy();
      }
      const end = Math.min(offset + step, pcm.length);
      const last = end >= pcm.length;
      const event = JSON.stringify({
        candidates: [candidate(pcm.subarray(offset, end).toString('base64'), last)],
        ...(last ? { usageMetadata } : {}),
        ...envelope,
      });
      const text = sse ? `data: ${event}\r\n\r\n` : `${offset > 0 ? ',\r\n' : ''}${event}`;
      // Before a planned break the events must reach the caller, or the break would eat them.
      if (b.breakAfterEvents !== null) await new Promise<void>((resolve) => res.write(text, () => resolve()));
      else res.write(text);
      offset = end;
      if (!last && b.streamIntervalMs > 0) await sleep(b.streamIntervalMs, undefined, { signal });
    } while (offset < pcm.length);
    res.end(sse ? undefined : ']');
  }

  async function answerText(res: ServerResponse, model: string, request: GeminiChatRequest, b: MockGeminiBehaviour, streamed: boolean, sse: boolean, signal: AbortSignal) {
    const events = textEvents(request, model, b, streamed, randomUUID().replaceAll('-', '').slice(0, 22));
    if (!streamed) return void res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(events[0]));
    res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json; charset=UTF-8' });
    for (const [i, event] of events.entries()) {
      if (b.breakAfterEvents !== null && i >= b.breakAfterEvents) {
        brokenOnPurpose.add(res);
        return void res.destroy();
      }
      const text = sse ? `data: ${JSON.stringify(event)}\r\n\r\n` : `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(event)}`;
      // Before a planned break the events must reach the caller, or the break would eat them.
      if (b.breakAfterEvents !== null) await new Promise<void>((resolve) => res.write(text, () => resolve()));
      else res.write(text);
      if (i < events.length - 1 && b.streamIntervalMs > 0) await sleep(b.streamIntervalMs, undefined, { signal });
    }
    res.end(sse ? undefined : ']');
  }

  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, String(error));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;

  const mock: MockGeminiUpstream = {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    apiKey,
    stats,
    received,
    set(change) {
      behaviour = { ...behaviour, ...change };
    },
    failNext(count, failure, message) {
      if (count > 0) failures.push({ remaining: count, failure, message });
    },
    reset() {
      behaviour = { ...start };
      failures = [];
      Object.assign(stats, emptyStats());
      received.length = 0;
    },
    async waitFor(predicate, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(mock)) {
        if (Date.now() > deadline) throw new Error(`mock Gemini upstream: condition not met within ${timeoutMs} ms`);
        await sleep(10);
      }
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return mock;
}

const SAFETY_RATINGS = [
  { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_SEXUALLY_EXPLICIT', probability: 'NEGLIGIBLE' },
];

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * `:batchEmbedContents`, as Gemini checks it: every request names the model of the path
 * (`models/{model}`) and has text parts.
 */
function embedBatch(res: ServerResponse, model: string, body: unknown, sendError: (res: ServerResponse, status: number, message?: string) => void, single = false): void {
  const requests = (body as { requests?: unknown } | null)?.requests;
  if (!Array.isArray(requests) || requests.length === 0) return sendError(res, 400, '* BatchEmbedContentsRequest.requests: must not be empty');
  const embeddings = [];
  for (const [i, request] of (requests as { model?: unknown; content?: { parts?: { text?: unknown }[] }; outputDimensionality?: unknown }[]).entries()) {
    if (request?.model !== `models/${model}`) {
      return sendError(res, 400, `* BatchEmbedContentsRequest.requests[${i}].model: the model must match the parent model models/${model}`);
    }
    const parts = request.content?.parts;
    if (!Array.isArray(parts) || parts.length === 0 || parts.some((p) => typeof p?.text !== 'string')) {
      return sendError(res, 400, `* BatchEmbedContentsRequest.requests[${i}].content: must have text parts`);
    }
    const dimensions = typeof request.outputDimensionality === 'number' ? request.outputDimensionality : 8;
    const digest = createHash('sha256').update(parts.map((p) => p.text).join('')).digest();
    embeddings.push({ values: Array.from({ length: dimensions }, (_, d) => (digest[d % digest.length]! - 127.5) / 127.5) });
  }
  res.writeHead(200, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(single ? { embedding: embeddings[0] } : { embeddings }));
}
