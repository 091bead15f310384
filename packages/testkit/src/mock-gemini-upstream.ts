/**
 * A Gemini upstream on a real HTTP port, for tests and benchmarks: speech generation
 * (`mock-gemini-speech.ts`), a text model (`mock-gemini-text.ts`: text, function calls, JSON,
 * thoughts, for every body that asks for no audio) and embeddings (`mock-gemini-embeddings.ts`).
 * It speaks the wire format exactly as Google's `@google/genai` SDK expects it:
 *
 * - `POST /v1beta/models/{model}:generateContent` answers one `GenerateContentResponse`;
 * - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` answers server-sent events, each
 *   `data: <GenerateContentResponse JSON>\r\n\r\n`, with no `[DONE]` (without `alt=sse`, a JSON
 *   array of the same responses, as Gemini does);
 * - `:batchEmbedContents` and `:embedContent` answer embeddings;
 * - each under `/v1` too, as Google serves both;
 * - the key comes in the `x-goog-api-key` header; errors are `{"error":{code,message,status}}`.
 *
 * Its delays, hangs, scripted failures, concurrency limit, broken streams and counters are the
 * shared base's (`mock-upstream.ts`), under the names its callers know (`set`, `failNext`, `stats`).
 */
import { randomUUID } from 'node:crypto';
import {
  asksForSpeech,
  geminiChatRequest,
  geminiError,
  geminiGenerateRequest,
  toBadRequest,
  type GeminiChatRequest,
  type GeminiGenerateRequest,
} from '@gateway/contracts';
import { embed } from './mock-gemini-embeddings.ts';
import { spokenAnswer, type MockSpeechBehaviour } from './mock-gemini-speech.ts';
import { textEvents, type MockGeminiTextBehaviour } from './mock-gemini-text.ts';
import { sendEvents, startMockUpstream, type MockBehaviour, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';

export { mockSpeech, sinePcm, type MockSpeech } from './mock-gemini-speech.ts';

export const MOCK_GEMINI_API_KEY = 'mock-gemini-key';

/** What the mock does with the next requests; every field can change between tests with `set`. */
export interface MockGeminiBehaviour extends MockGeminiTextBehaviour, MockSpeechBehaviour {
  /** Wait this long before answering (for streams: before the first event). Default 0. */
  delayMs: number;
  /** Requests beyond this many at once get 429 RESOURCE_EXHAUSTED. Default unlimited. */
  maxConcurrent: number;
  /** Never answer (until the caller gives up or the mock closes). Default false. */
  hang: boolean;
  /** Pause between streamed events. Default 0. */
  streamIntervalMs: number;
  /** A stream (of audio or of text) breaks its connection after sending this many events. Default null (never). */
  breakAfterEvents: number | null;
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
  /** The parsed JSON body. */
  body: unknown;
}

export interface MockGeminiStats {
  /** Every request that arrived. */
  readonly requests: number;
  /** Requests being served right now (not counting immediate rejections). */
  readonly inFlight: number;
  /** The most requests served at once. */
  readonly maxInFlight: number;
  /** Successful replies fully sent. */
  readonly completed: number;
  /** Requests whose caller went away before the reply was complete. */
  readonly aborted: number;
  /** Requests refused with 429 because of `maxConcurrent`. */
  readonly rateLimited: number;
  /** Requests failed on purpose: an injected status or reset, a stream broken by `breakAfterEvents`. */
  readonly failed: number;
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

/** A behaviour, or a scripted failure the base answers in its place. */
type GeminiBehaviour = MockGeminiBehaviour & MockBehaviour;

const RECEIVED_KEPT = 1000;
const JSON_TYPE = 'application/json; charset=UTF-8';
const RETRY_IN_A_SECOND = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' }];

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

/** Gemini's error body for `status`, its default message unless one is given; a 429 says when to retry. */
const failureBody = (status: number, message = DEFAULT_MESSAGES[status] ?? `HTTP ${status}`) =>
  geminiError(status, message, status === 429 ? RETRY_IN_A_SECOND : undefined);

/** Under `/v1` and `/v1beta`, as Google serves both. */
const ROUTE = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/;

export async function startMockGeminiUpstream(options: MockGeminiOptions = {}): Promise<MockGeminiUpstream> {
  const { apiKey = MOCK_GEMINI_API_KEY, invalidKeyStatus = 403, models, port, speak, ...initial } = options;
  const start: MockGeminiBehaviour = { ...DEFAULT_BEHAVIOUR, ...initial };
  let behaviour = start;
  const base = await startMockUpstream<GeminiBehaviour, MockGeminiRequest>(geminiWireFormat({ apiKey, invalidKeyStatus, models, speak }), start, { port, keep: RECEIVED_KEPT });
  const apply = (next: MockGeminiBehaviour) => {
    behaviour = next;
    base.setBehaviour(next);
    base.limitConcurrency(Number.isFinite(next.maxConcurrent) ? next.maxConcurrent : 0, null);
  };
  apply(start);
  const stats: MockGeminiStats = {
    get requests() { return base.arrived; },
    get inFlight() { return base.inFlight; },
    get maxInFlight() { return base.maxInFlight; },
    get completed() { return base.completed; },
    get aborted() { return base.aborted; },
    get rateLimited() { return base.overLimit; },
    get failed() { return base.failed; },
  };
  const mock: MockGeminiUpstream = {
    url: base.url,
    port: Number(new URL(base.url).port),
    apiKey,
    stats,
    get received() { return base.requests; },
    set: (change) => apply({ ...behaviour, ...change }),
    failNext(count, failure, message) {
      // A failure answers at once, whatever the behaviour's delay or hang.
      const scripted: GeminiBehaviour = { ...behaviour, delayMs: 0, hang: failure === 'hang', reset: failure === 'reset' };
      if (typeof failure === 'number') Object.assign(scripted, { status: failure, body: failureBody(failure, message) });
      base.next(...Array.from({ length: Math.max(0, count) }, () => scripted));
    },
    reset() {
      base.reset();
      apply(start);
    },
    waitFor: (predicate, timeoutMs) => base.waitFor(() => predicate(mock), timeoutMs),
    close: () => base.close(),
  };
  return mock;
}

interface GeminiService {
  apiKey: string;
  invalidKeyStatus: 400 | 401 | 403;
  models: string[] | undefined;
  speak: ((text: string) => Promise<Buffer>) | undefined;
}

/** Gemini's wire format on the shared mock: its routes and key check, its error bodies, its answers. */
function geminiWireFormat({ apiKey, invalidKeyStatus, models, speak }: GeminiService): MockWireFormat<GeminiBehaviour, MockGeminiRequest> {
  const parse = (r: ReceivedRequest) => {
    const url = new URL(r.path, 'http://mock');
    const route = r.method === 'POST' ? ROUTE.exec(url.pathname) : null;
    const model = route ? decodeURIComponent(route[1]!) : '';
    const method = (route?.[2] ?? 'generateContent') as MockGeminiRequest['method'];
    return { url, route, model, method, sse: url.searchParams.get('alt') === 'sse' };
  };
  const keyOf = (r: ReceivedRequest) => (Array.isArray(r.headers['x-goog-api-key']) ? r.headers['x-goog-api-key'][0] : r.headers['x-goog-api-key']);
  const refuse = (status: number, message?: string, details?: unknown[]) => ({ status, body: geminiError(status, message ?? DEFAULT_MESSAGES[status] ?? `HTTP ${status}`, details) });
  return {
    name: 'mock Gemini upstream',
    record(r) {
      const { model, method } = parse(r);
      return { model, method, apiKey: keyOf(r), body: r.json };
    },
    headers: () => ({ 'content-type': JSON_TYPE }),
    invalidJson: (r) => geminiError(400, `Invalid JSON payload received. ${r.raw.slice(0, 80)}`),
    check(r) {
      const key = keyOf(r);
      if (key === undefined) {
        return refuse(401, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
      }
      if (key !== apiKey) {
        if (invalidKeyStatus === 400) {
          return refuse(400, 'API key not valid. Please pass a valid API key.', [
            { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
          ]);
        }
        return refuse(invalidKeyStatus, invalidKeyStatus === 403 ? 'Permission denied: the API key is not allowed to call this API.' : undefined);
      }
      const { url, route, model } = parse(r);
      if (!route) return refuse(404, `The requested URL ${url.pathname} was not found on this server.`);
      if (models && !models.includes(model)) return refuse(404, `models/${model} is not found for API version v1beta, or is not supported for generateContent.`);
      return undefined;
    },
    failureBody: (status) => failureBody(status),
    overLimitBody: () => failureBody(429),
    async answer(exchange, b) {
      const { res, fail } = exchange;
      const body = exchange.request.json ?? {};
      const { model, method, sse } = parse(exchange.request);
      const whole = (reply: unknown) => void res.writeHead(200, { 'content-type': JSON_TYPE }).end(JSON.stringify(reply));
      if (method === 'batchEmbedContents' || method === 'embedContent') {
        const answer = embed(model, body, method === 'embedContent');
        return 'refused' in answer ? fail(400, geminiError(400, answer.refused)) : whole(answer.body);
      }
      const speech = asksForSpeech(body);
      const parsed = speech ? geminiGenerateRequest.safeParse(body) : geminiChatRequest.safeParse(body);
      if (!parsed.success) return fail(400, geminiError(400, toBadRequest(parsed.error).message));
      const streamed = method === 'streamGenerateContent';
      let events: Iterable<unknown>;
      if (speech) {
        const spoken = await spokenAnswer(model, parsed.data as GeminiGenerateRequest, b, speak);
        if (!streamed) return whole(spoken.whole());
        events = spoken.pieces();
      } else {
        const texts = textEvents(parsed.data as GeminiChatRequest, model, b, streamed, randomUUID().replaceAll('-', '').slice(0, 22));
        if (!streamed) return whole(texts[0]);
        events = texts;
      }
      res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : JSON_TYPE });
      const ended = await sendEvents(exchange, framed(events, sse), { intervalMs: b.streamIntervalMs, breakAfterEvents: b.breakAfterEvents });
      if (ended) res.end(sse ? undefined : ']');
    },
  };
}

/** Each response as an event of the stream: `data: …` blocks with `alt=sse`, else a JSON array. */
function* framed(events: Iterable<unknown>, sse: boolean): Generator<string> {
  let first = true;
  for (const event of events) {
    yield sse ? `data: ${JSON.stringify(event)}\r\n\r\n` : `${first ? '[' : ',\r\n'}${JSON.stringify(event)}`;
    first = false;
  }
}
