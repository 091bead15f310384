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
 * Its wire format is `mock-gemini-wire-format.ts`, its behaviours `mock-gemini-behaviour.ts`, its
 * error bodies `mock-gemini-errors.ts`. Its delays, hangs, scripted failures, concurrency limit,
 * broken streams and counters are the shared base's (`mock-upstream.ts`), under the names its
 * callers know (`set`, `failNext`, `stats`).
 */
import { DEFAULT_GEMINI_BEHAVIOUR, scriptedFailure, type GeminiBehaviour, type MockGeminiBehaviour, type MockGeminiFailure } from './mock-gemini-behaviour.ts';
import { geminiWireFormat, type MockGeminiRequest } from './mock-gemini-wire-format.ts';
import { startMockUpstream } from './mock-upstream.ts';

export { mockSpeech, sinePcm, type MockSpeech } from './mock-gemini-speech.ts';
export type { MockGeminiBehaviour, MockGeminiFailure } from './mock-gemini-behaviour.ts';
export type { MockGeminiRequest } from './mock-gemini-wire-format.ts';

export const MOCK_GEMINI_API_KEY = 'mock-gemini-key';

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

const RECEIVED_KEPT = 1000;

export async function startMockGeminiUpstream(options: MockGeminiOptions = {}): Promise<MockGeminiUpstream> {
  const { apiKey = MOCK_GEMINI_API_KEY, invalidKeyStatus = 403, models, port, speak, ...initial } = options;
  const start: MockGeminiBehaviour = { ...DEFAULT_GEMINI_BEHAVIOUR, ...initial };
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
      const scripted = scriptedFailure(behaviour, failure, message);
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
