/**
 * A real HTTP server speaking Anthropic's Messages API (`POST /v1/messages`, whole or streamed
 * as server-sent events, with tool use and extended thinking; `POST /v1/messages/count_tokens`), which a test can make slow, fail, rate-limit, hang or break mid-stream,
 * and which counts what it saw. It refuses what Anthropic refuses (`mock-anthropic-checks.ts`) and
 * answers as Anthropic does (`mock-anthropic-reply.ts`). Its options and counters are the OpenAI
 * mock's, so a test moves from one to the other without relearning.
 */
import { sendEvents, sleepUnlessGone, startMockUpstream, type MockBehaviour, type MockExchange, type MockUpstream, type MockWireFormat, type ReceivedRequest } from './mock-upstream.ts';
import { refusalOf } from './mock-anthropic-checks.ts';
import { MockPromptCache } from './mock-anthropic-cache.ts';
import { errorBody, errorTypeOf, planReply, requestText, streamEvents, tokens, wholeMessage, type MockToolUse } from './mock-anthropic-reply.ts';

/** What the mock does with a request. Unset fields fall back to a quick, correct answer. */
/** A failure's `status` is answered with Anthropic's error body for it (529: overloaded_error). */
export interface MockAnthropicBehaviour extends MockBehaviour {
  /** A stream waits this long after each event. */
  chunkDelayMs?: number;
  /** A stream breaks its connection after sending this many events. */
  breakAfterChunks?: number;
  /** A stream sends Anthropic's `error` event after this many events, then ends. */
  streamError?: { afterEvents: number; type?: string; message?: string };
  /** The reply text, or a function of the last user message's text (streamed a word at a time). */
  text?: string | ((prompt: string) => string);
  /**
   * Call this tool whatever the request says, or the tool a function of the request decides
   * (otherwise: when tools are given and the user asks about the weather).
   */
  toolUse?: MockToolUse | ((request: Record<string, unknown>) => MockToolUse | undefined);
  /**
   * Keep a prompt cache as Anthropic does (`MockPromptCache`): the prefix up to each
   * `cache_control` mark is written, and read by a later request to this mock that repeats it;
   * the usage reports both. Otherwise both are 0.
   */
  promptCache?: boolean;
  /**
   * Report this prompt cache use on every reply whatever its marks, as a provider that caches by
   * itself would (for a door that sets no marks); its counts come out of the prompt's.
   */
  cacheUse?: { read: number; written: number };
}

export interface MockAnthropicRequest {
  /** Its number, as its `request-id` (`req_mock_<id>`) says. */
  id: number;
  method: string;
  path: string;
  /** The `x-api-key` header. */
  apiKey: string | undefined;
  /** The `authorization` header (the 1.x SDKs send the key as a bearer token). */
  authorization: string | undefined;
  anthropicVersion: string | undefined;
  /** The `anthropic-beta` header, as it came. */
  anthropicBeta: string | undefined;
  body: Record<string, unknown>;
  /** The body's bytes as they came, for a test that checks blocks arrived byte for byte. */
  rawBody: string;
  at: number;
}

export type MockAnthropicUpstream = MockUpstream<MockAnthropicBehaviour, MockAnthropicRequest>;

export async function startMockAnthropicUpstream(initial: MockAnthropicBehaviour = {}): Promise<MockAnthropicUpstream> {
  const promptCache = new MockPromptCache();
  const mock = await startMockUpstream(anthropicWireFormat(promptCache), initial);
  const forget = mock.reset;
  mock.reset = () => {
    forget();
    promptCache.clear();
  };
  return mock;
}

/** Anthropic's wire format on the shared mock: its checks, its error bodies and request ids, its answers. */
function anthropicWireFormat(promptCache: MockPromptCache): MockWireFormat<MockAnthropicBehaviour, MockAnthropicRequest> {
  let sequence = 0;
  const numberOf = new WeakMap<ReceivedRequest, number>();
  const idOf = (r: ReceivedRequest) => {
    let n = numberOf.get(r);
    if (n === undefined) numberOf.set(r, (n = ++sequence));
    return n;
  };
  const requestId = (r: ReceivedRequest) => `req_mock_${idOf(r)}`;
  const header = (r: ReceivedRequest, name: string) => (typeof r.headers[name] === 'string' ? (r.headers[name] as string) : undefined);
  return {
    name: 'mock Anthropic upstream',
    record: (r) => ({ id: idOf(r), method: r.method, path: r.path, apiKey: header(r, 'x-api-key'), authorization: header(r, 'authorization'), anthropicVersion: header(r, 'anthropic-version'), anthropicBeta: header(r, 'anthropic-beta'), body: r.json ?? {}, rawBody: r.raw, at: r.at }),
    headers: (r) => ({ 'request-id': requestId(r) }),
    invalidJson: (r) => errorBody('invalid_request_error', 'The request body is not valid JSON.', requestId(r)),
    check(r) {
      if (r.method === 'POST' && r.path === '/v1/messages/count_tokens') return 'answered-outside';
      if (r.method !== 'POST' || r.path !== '/v1/messages') return { status: 404, body: errorBody('not_found_error', `Not found: ${r.method} ${r.path}`, requestId(r)) };
      const refusal = refusalOf(r.headers, r.json ?? {});
      return refusal ? { status: refusal.status, body: errorBody(refusal.type, refusal.message, requestId(r)) } : undefined;
    },
    answerOutside({ request: r, res, fail }) {
      const body = r.json ?? {};
      const refusal = refusalOf(r.headers, { max_tokens: 1, ...body });
      if (refusal) return fail(refusal.status, errorBody(refusal.type, refusal.message, requestId(r)));
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId(r) }).end(JSON.stringify({ input_tokens: tokens(requestText(body)) }));
    },
    failureBody(status, r) {
      const type = errorTypeOf(status);
      return errorBody(type, status === 529 ? 'Overloaded' : `mock ${type}`, requestId(r));
    },
    overLimitBody: (r) => errorBody('rate_limit_error', 'This request would exceed the rate limit for your organization. Please retry later.', requestId(r)),
    answer: (exchange, b) => answerAnthropic(exchange, idOf(exchange.request), b, promptCache),
  };
}

/**
 * Anthropic's answer to a Messages body, whole or streamed as its `stream` says; request `n`
 * names it (`req_mock_<n>`). Vertex AI's mock answers its Claude models with it.
 */
export async function answerAnthropic(exchange: MockExchange, n: number, b: MockAnthropicBehaviour, promptCache?: MockPromptCache): Promise<void> {
  const { res, request } = exchange;
  const body = request.json ?? {};
  const cache = b.promptCache && promptCache ? promptCache.use(body) : b.cacheUse;
  const plan = cache ? { ...planReply(body, b, n), cache } : planReply(body, b, n);
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_mock_${n}` }).end(JSON.stringify(wholeMessage(plan)));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': `req_mock_${n}` });
  if (!(await sendEvents(exchange, framed(streamEvents(plan), b.streamError), { intervalMs: b.chunkDelayMs, breakAfterEvents: b.breakAfterChunks }))) return;
  if (b.chunkDelayMs) await sleepUnlessGone(b.chunkDelayMs, exchange.gone);
  res.end();
}

/** Each event as a server-sent event; from `streamError.afterEvents` on, Anthropic's `error` event instead, and the end. */
function* framed(events: Iterable<Record<string, unknown>>, streamError: MockAnthropicBehaviour['streamError']): Generator<string> {
  const frame = (event: Record<string, unknown>) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;
  let sent = 0;
  for (const event of events) {
    if (streamError && sent >= streamError.afterEvents) {
      const { type = 'overloaded_error', message = 'Overloaded' } = streamError;
      yield frame(errorBody(type, message));
      return;
    }
    yield frame(event);
    sent++;
  }
}
