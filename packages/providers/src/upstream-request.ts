/**
 * The one way providers talk HTTP to an upstream: a shared keep-alive connection pool, the
 * time-outs, the caller's AbortSignal, and every failure turned into an `UpstreamError`.
 *
 * A stream's time-outs are undici's own: its headers must come within `timeoutMs`
 * (`headersTimeout`) and then each next piece within `timeoutMs` (`bodyTimeout`, the idle time
 * between body chunks, which undici does not count while the reader holds the stream paused).
 * undici keeps those two on a clock of about half a second: a stream's time-out may fire that
 * much late (and a short one, under a second, takes about a second). A whole reply must be
 * complete within `timeoutMs` (`replyDeadline`).
 */
import { isIP } from 'node:net';
import { Agent, fetch as undiciFetch, request, type Dispatcher } from 'undici';
import { policedConnector } from './policed-connector.ts';
import { addressProblem, portOf, type AddressPolicy } from './upstream-address-policy.ts';
import { NOT_JSON_BODY, parseRetryAfter, UpstreamError, upstreamFailure, withoutReflectedSecret } from '@gateway/contracts';

/**
 * The largest upstream reply read whole, and the largest single streamed event (past either
 * the call fails with a protocol error, a 502 when no other channel answers), so that memory
 * stays bounded whatever an upstream sends. The model workers set them from
 * UPSTREAM_MAX_REPLY_BYTES and UPSTREAM_MAX_EVENT_BYTES.
 */
export const upstreamLimits = {
  maxReplyBytes: 64 * 1024 * 1024,
  maxEventBytes: 64 * 1024 * 1024,
};

export function setUpstreamLimits(limits: Partial<typeof upstreamLimits>): void {
  Object.assign(upstreamLimits, limits);
}

let addressPolicy: AddressPolicy = { allowPrivate: true, forbidden: [] };

/** Where upstream calls may connect (the model workers set it from their configuration). */
export function setAddressPolicy(policy: AddressPolicy): void {
  addressPolicy = policy;
}

/**
 * Sent on every upstream call; the gateway refuses a request that carries it, so a channel that
 * points at a gateway cannot make requests loop.
 */
export const HOP_HEADER = 'x-gateway-hop';

/** Shared by every upstream call of the process: connections are reused across requests. */
const upstreamAgent = new Agent({
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  connect: policedConnector(() => addressPolicy),
  // Time-outs are set per call (per channel), never undici's defaults of 300 s.
  headersTimeout: 0,
  bodyTimeout: 0,
});

/**
 * `fetch` over the same pool and address policy as every upstream call, for a provider that
 * fetches something before its call (an OAuth token from the token endpoint a credential names)
 * through a library that takes a `fetch`.
 */
export const policedFetch = ((input: string | URL, init?: Parameters<typeof undiciFetch>[1]) => {
  const refused = literalAddressProblem(String(input instanceof URL ? input.href : input));
  if (refused) return Promise.reject(Object.assign(new Error(`upstream address refused: ${refused}`), { code: 'EUPSTREAMFORBIDDEN' }));
  return undiciFetch(input, { ...init, dispatcher: upstreamAgent });
}) as unknown as typeof fetch;

/** A request as its provider prepared it (`OutgoingRequest`), and how long it may take. */
export interface UpstreamRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** The body's bytes, as the provider signed them: sent as they are. */
  body: Buffer | string;
  /** Milliseconds for the whole reply (a stream: for its headers, then for each next piece); 0: no limit. */
  timeoutMs: number;
  /** Aborted when nobody waits for the answer any more. */
  signal?: AbortSignal;
}

/** A 2xx reply whose body is still to be read. */
export interface OpenUpstreamReply {
  body: Dispatcher.ResponseData['body'];
  /** The reply's Content-Type, as the upstream sent it (unset when it sent none). */
  contentType?: string;
  /** Turns an error thrown while reading the body into an `UpstreamError`. */
  failure(error: unknown): UpstreamError;
}

/**
 * Sends a request and returns the parsed JSON reply (at most `upstreamLimits.maxReplyBytes`),
 * all within `timeoutMs`; `without` (secret forms) are taken out of every string in it.
 */
export async function postUpstreamJson(req: UpstreamRequest, without: readonly string[] = []): Promise<unknown> {
  const deadline = replyDeadline(req.timeoutMs, req.signal);
  let text: string;
  try {
    const reply = await send(req, { signal: deadline.signal, timedOut: deadline.passed });
    try {
      text = (await readAtMost(reply.body, upstreamLimits.maxReplyBytes, () => tooLarge('reply', upstreamLimits.maxReplyBytes))).toString('utf8');
    } catch (error) {
      throw reply.failure(error);
    }
  } finally {
    deadline.release();
  }
  try {
    const value: unknown = JSON.parse(text);
    return withoutReflectedSecret(value, text, without);
  } catch (error) {
    throw upstreamFailure.protocol('the upstream reply is not JSON', { cause: error });
  }
}

/**
 * Sends a request and resolves once a 2xx reply's headers arrived (within `timeoutMs`); its
 * body is then the stream, each next piece within `timeoutMs`.
 */
export function openUpstreamStream(req: UpstreamRequest): Promise<OpenUpstreamReply> {
  return send(req, { signal: req.signal, headersTimeout: req.timeoutMs, bodyTimeout: req.timeoutMs });
}

/**
 * A whole reply's signal: aborted when the caller's is, or once `timeoutMs` have passed. Joined
 * here rather than with `AbortSignal.any([caller, AbortSignal.timeout(ms)])`, which in Node 24
 * costs about 15 µs more per upstream call and holds each time-out signal (about 0.5 KB) until
 * its time has passed, however early the reply came.
 */
function replyDeadline(timeoutMs: number, caller: AbortSignal | undefined) {
  const controller = new AbortController();
  let passed = false;
  const timer = timeoutMs > 0 ? setTimeout(() => { passed = true; controller.abort(); }, timeoutMs) : undefined;
  const cancel = () => controller.abort();
  if (caller?.aborted) cancel();
  else caller?.addEventListener('abort', cancel, { once: true });
  return {
    signal: controller.signal,
    passed: () => passed,
    release() {
      clearTimeout(timer);
      caller?.removeEventListener('abort', cancel);
    },
  };
}

interface SendOptions {
  signal?: AbortSignal;
  /** Whether a whole reply's time has run out. */
  timedOut?: () => boolean;
  headersTimeout?: number;
  bodyTimeout?: number;
}

const MAX_ERROR_BODY = 64 * 1024;
const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** Sends a request; any status but 2xx, a time-out, an abort or a connection error rejects with an `UpstreamError`. */
async function send(req: UpstreamRequest, options: SendOptions): Promise<OpenUpstreamReply> {
  const failure = (error: unknown): UpstreamError => {
    const code = (error as { code?: string } | undefined)?.code ?? '';
    if (options.timedOut?.()) return timeoutError(req.timeoutMs);
    if (req.signal?.aborted) return upstreamFailure.cancelled('the request was cancelled', error);
    if (UNDICI_TIMEOUTS.has(code)) return timeoutError(req.timeoutMs);
    if (error instanceof UpstreamError) return error;
    return upstreamFailure.connection(code === 'EUPSTREAMFORBIDDEN' ? (error as Error).message : `upstream connection failed: ${code || (error as Error).message}`, error);
  };

  const refused = literalAddressProblem(req.url);
  if (refused) throw upstreamFailure.connection(`upstream address refused: ${refused}`);
  let response: Dispatcher.ResponseData;
  try {
    response = await request(req.url, {
      method: req.method as Dispatcher.HttpMethod,
      headers: { ...req.headers, [HOP_HEADER]: '1' },
      body: req.body,
      signal: options.signal,
      headersTimeout: options.headersTimeout,
      bodyTimeout: options.bodyTimeout,
      dispatcher: upstreamAgent,
    });
  } catch (error) {
    throw failure(error);
  }
  if (response.statusCode < 200 || response.statusCode >= 300) throw await httpFailure(response);
  const contentType = response.headers['content-type'];
  return { body: response.body, failure, contentType: typeof contentType === 'string' ? contentType : undefined };
}

const timeoutError = (timeoutMs: number) => upstreamFailure.timeout(`the upstream did not answer within ${timeoutMs} ms`);

const tooLarge = (what: string, limit: number) =>
  upstreamFailure.protocol(`the upstream ${what} is larger than ${limit} bytes (the gateway's limit)`, { ofTheRequest: true });

/** An address written in the URL is never looked up, so the policy is checked here. */
function literalAddressProblem(target: string): string | undefined {
  const url = new URL(target);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host)) return undefined;
  return addressProblem(host, portOf(url), addressPolicy);
}

/**
 * A reply that is not 2xx, as an `http` failure with the upstream's status, Retry-After and
 * (JSON) body. What the upstream says may be relayed to the client; the router takes the
 * channel's key (and anything key-shaped) out of every failure, whichever provider raised it.
 */
async function httpFailure(response: Dispatcher.ResponseData): Promise<UpstreamError> {
  let text = '';
  try {
    text = (await readAtMost(response.body, MAX_ERROR_BODY)).toString('utf8');
  } catch {
    /* the status says enough */
  }
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return upstreamFailure.http(response.statusCode, `upstream answered ${response.statusCode}${upstreamMessage(body, text)}`, { retryAfter: parseRetryAfter(response.headers['retry-after']), body });
}

/**
 * At most `limit` bytes of a body. Past it: `tooBig` is thrown when given (the reply is refused),
 * else the rest is left unread (an error body is only ever shown in part). Either way the body
 * stream is destroyed, so the connection stops receiving.
 */
async function readAtMost(body: Dispatcher.ResponseData['body'], limit: number, tooBig?: () => Error): Promise<Buffer> {
  let size = 0;
  const parts: Buffer[] = [];
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      if (tooBig) throw tooBig();
      parts.push(chunk.subarray(0, chunk.length - (size - limit)));
      break;
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts);
}

/** The upstream's own error message; a body that is not JSON is named, never shown. */
function upstreamMessage(body: unknown, text: string): string {
  const error = (body as { error?: { message?: unknown } } | undefined)?.error;
  if (typeof error?.message === 'string') return `: ${error.message}`;
  if (body === undefined && text.trim()) return NOT_JSON_BODY;
  return '';
}
