/**
 * Gemini's wire format on the shared mock (`mock-upstream.ts`): its routes under `/v1` and
 * `/v1beta`, its key check in `x-goog-api-key`, its error bodies, and its answers (embeddings,
 * speech, text), whole or streamed (`alt=sse` events, else a JSON array, as Gemini does).
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
import type { GeminiBehaviour } from './mock-gemini-behaviour.ts';
import { embed } from './mock-gemini-embeddings.ts';
import { GEMINI_JSON_TYPE, geminiFailureBody, geminiRefusal } from './mock-gemini-errors.ts';
import { spokenAnswer } from './mock-gemini-speech.ts';
import { textEvents } from './mock-gemini-text.ts';
import { sendEvents } from './mock-stream-writing.ts';
import type { MockWireFormat, ReceivedRequest } from './mock-wire-format.ts';

export interface MockGeminiRequest {
  model: string;
  method: 'generateContent' | 'streamGenerateContent' | 'embedContent' | 'batchEmbedContents';
  apiKey: string | undefined;
  /** The parsed JSON body. */
  body: unknown;
}

/** What the mock serves and to whom. */
export interface GeminiService {
  apiKey: string;
  invalidKeyStatus: 400 | 401 | 403;
  models: string[] | undefined;
  speak: ((text: string) => Promise<Buffer>) | undefined;
}

/** Under `/v1` and `/v1beta`, as Google serves both. */
const ROUTE = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent|embedContent|batchEmbedContents)$/;

const parse = (r: ReceivedRequest) => {
  const url = new URL(r.path, 'http://mock');
  const route = r.method === 'POST' ? ROUTE.exec(url.pathname) : null;
  const model = route ? decodeURIComponent(route[1]!) : '';
  const method = (route?.[2] ?? 'generateContent') as MockGeminiRequest['method'];
  return { url, route, model, method, sse: url.searchParams.get('alt') === 'sse' };
};

const keyOf = (r: ReceivedRequest) => (Array.isArray(r.headers['x-goog-api-key']) ? r.headers['x-goog-api-key'][0] : r.headers['x-goog-api-key']);

export function geminiWireFormat({ apiKey, invalidKeyStatus, models, speak }: GeminiService): MockWireFormat<GeminiBehaviour, MockGeminiRequest> {
  return {
    name: 'mock Gemini upstream',
    record(r) {
      const { model, method } = parse(r);
      return { model, method, apiKey: keyOf(r), body: r.json };
    },
    headers: () => ({ 'content-type': GEMINI_JSON_TYPE }),
    invalidJson: (r) => geminiError(400, `Invalid JSON payload received. ${r.raw.slice(0, 80)}`),
    check(r) {
      const key = keyOf(r);
      if (key === undefined) {
        return geminiRefusal(401, 'Method doesn\'t allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.');
      }
      if (key !== apiKey) {
        if (invalidKeyStatus === 400) {
          return geminiRefusal(400, 'API key not valid. Please pass a valid API key.', [
            { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' },
          ]);
        }
        return geminiRefusal(invalidKeyStatus, invalidKeyStatus === 403 ? 'Permission denied: the API key is not allowed to call this API.' : undefined);
      }
      const { url, route, model } = parse(r);
      if (!route) return geminiRefusal(404, `The requested URL ${url.pathname} was not found on this server.`);
      if (models && !models.includes(model)) return geminiRefusal(404, `models/${model} is not found for API version v1beta, or is not supported for generateContent.`);
      return undefined;
    },
    failureBody: (status) => geminiFailureBody(status),
    overLimitBody: () => geminiFailureBody(429),
    async answer(exchange, b) {
      const { res, fail } = exchange;
      const body = exchange.request.json ?? {};
      const { model, method, sse } = parse(exchange.request);
      const whole = (reply: unknown) => void res.writeHead(200, { 'content-type': GEMINI_JSON_TYPE }).end(JSON.stringify(reply));
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
      res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : GEMINI_JSON_TYPE });
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
