/**
 * Speech generation against a Gemini-style upstream: the request sent to the channel's model,
 * the reply (or each stream event) checked against the wire format with `safetyRatings` always
 * present, and every failure an `UpstreamError` the router can act on.
 */
import { geminiGenerateResponse, UpstreamError, type GeminiGenerateRequest, type GeminiGenerateResponse } from '@gateway/contracts';
import { readServerSentEvents } from '../server-sent-events.ts';
import { openUpstreamStream, postUpstreamJson } from '../upstream-request.ts';
import { geminiApi } from './api.ts';

/** Where and how to call: one channel, as the router chose it. */
export interface GeminiTarget {
  baseUrl: string;
  key: string;
  /** The model name the upstream knows (after the channel's model_mapping). */
  upstreamModel: string;
  /** Milliseconds for the whole reply; for a stream, for the headers and then each next event. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * The body sent upstream: the client's body as validated, unknown-to-us Gemini fields included.
 * A `model` in the body is dropped: the path carries the channel's model, and Gemini refuses a
 * body whose model disagrees with the path.
 */
export function toUpstreamRequest(request: GeminiGenerateRequest): Record<string, unknown> {
  const { model: _model, ...body } = request;
  return body;
}

/** The upstream's reply (or stream event) as the client sees it. */
export function fromUpstreamResponse(raw: unknown): GeminiGenerateResponse {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new UpstreamError({ kind: 'protocol', message: 'the upstream reply is not a JSON object' });
  }
  const body = raw as Record<string, unknown>;
  // Gemini reports a failure inside a 200 stream as an event holding `{error}`.
  if (body.error && !body.candidates) {
    const error = body.error as { code?: unknown; message?: unknown };
    throw httpFailure({
      status: typeof error.code === 'number' && error.code >= 400 ? error.code : 502,
      body,
      message: `upstream error: ${typeof error.message === 'string' ? error.message : 'unknown'}`,
    });
  }
  const parsed = geminiGenerateResponse.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UpstreamError({ kind: 'protocol', message: `the upstream reply does not follow the Gemini format at ${issue.path.join('.') || 'its root'}: ${issue.message}` });
  }
  return parsed.data;
}

/** One speech generation, answered whole. */
export async function generateContent(target: GeminiTarget, request: GeminiGenerateRequest): Promise<GeminiGenerateResponse> {
  let raw: unknown;
  try {
    raw = await postUpstreamJson({
      url: geminiApi.generateContentUrl(target.baseUrl, target.upstreamModel),
      headers: geminiApi.headers(target.key, false),
      body: toUpstreamRequest(request),
      timeoutMs: target.timeoutMs,
      signal: target.signal,
    });
  } catch (error) {
    throw geminiFailure(error);
  }
  return fromUpstreamResponse(raw);
}

/**
 * One speech generation as a stream of events (`:streamGenerateContent?alt=sse`). Resolves once
 * the upstream accepted the request (a refusal rejects here, before anything reached the client,
 * so the router may fail over); the events then come as the upstream sends them. Gemini ends a
 * stream without `[DONE]`: the last event carries the finishReason, and a stream that stops
 * before one is reported as broken.
 */
export async function streamGenerateContent(target: GeminiTarget, request: GeminiGenerateRequest): Promise<AsyncGenerator<GeminiGenerateResponse>> {
  let reply: Awaited<ReturnType<typeof openUpstreamStream>>;
  try {
    reply = await openUpstreamStream({
      url: geminiApi.streamGenerateContentUrl(target.baseUrl, target.upstreamModel),
      headers: geminiApi.headers(target.key, true),
      body: toUpstreamRequest(request),
      timeoutMs: target.timeoutMs,
      signal: target.signal,
    });
  } catch (error) {
    throw geminiFailure(error);
  }
  const open = reply;
  async function* events(): AsyncGenerator<GeminiGenerateResponse> {
    let finished = false;
    try {
      for await (const data of readServerSentEvents(open.body)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(data);
        } catch (error) {
          throw new UpstreamError({ kind: 'protocol', message: 'the upstream sent a stream event that is not JSON', cause: error });
        }
        const event = fromUpstreamResponse(parsed);
        if (event.candidates?.some((candidate) => candidate.finishReason)) finished = true;
        yield event;
      }
      if (!finished) throw new UpstreamError({ kind: 'connection', message: 'the upstream stream ended before its finishReason' });
    } catch (error) {
      throw geminiFailure(open.failure(error));
    } finally {
      if (!finished) open.body.destroy();
      else open.body.resume();
    }
  }
  return events();
}

/**
 * Gemini-specific readings of an HTTP failure: the retry delay Gemini puts in the body rather
 * than a Retry-After header, and Gemini's "400 API_KEY_INVALID", which is the channel's fault
 * (a bad key), not the caller's, so it is reported as the 401 it means.
 */
export function geminiFailure(error: unknown): unknown {
  if (!(error instanceof UpstreamError) || error.kind !== 'http') return error;
  const status = error.status === 400 && errorReason(error.body) === 'API_KEY_INVALID' ? 401 : error.status;
  const retryAfter = error.retryAfter ?? retryDelaySeconds(error.body);
  if (status === error.status && retryAfter === error.retryAfter) return error;
  return new UpstreamError({ kind: 'http', status, retryAfter, body: error.body, message: error.message, cause: error.cause });
}

function httpFailure(options: { status: number; body: unknown; message: string }): unknown {
  return geminiFailure(new UpstreamError({ kind: 'http', ...options }));
}

function errorDetails(body: unknown): Record<string, unknown>[] {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
  return Array.isArray(details) ? details.filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null) : [];
}

function errorReason(body: unknown): string | undefined {
  const info = errorDetails(body).find((d) => typeof d.reason === 'string');
  return info?.reason as string | undefined;
}

/** `google.rpc.RetryInfo.retryDelay`, a duration such as "37s" or "1.5s", in whole seconds. */
function retryDelaySeconds(body: unknown): number | undefined {
  const info = errorDetails(body).find((d) => String(d['@type'] ?? '').endsWith('google.rpc.RetryInfo'));
  const match = typeof info?.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(info.retryDelay) : null;
  return match ? Math.ceil(Number(match[1])) : undefined;
}
