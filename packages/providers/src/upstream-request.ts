/**
 * The one way providers talk HTTP to an upstream: a shared keep-alive connection pool, a
 * time-out, the caller's AbortSignal, and every failure turned into an `UpstreamError`.
 */
import { isIP } from 'node:net';
import { Agent, request, type Dispatcher } from 'undici';
import { addressProblem, policedLookup, type AddressPolicy } from './upstream-address-policy.ts';
import { NOT_JSON_BODY, parseRetryAfter, UpstreamError } from '@gateway/contracts';

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

const tooLarge = (what: string, limit: number) =>
  new UpstreamError({ kind: 'protocol', message: `the upstream ${what} is larger than ${limit} bytes (the gateway's limit)` });

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
export const upstreamAgent = new Agent({
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  // Every address a name resolves to is checked against the policy before connecting.
  connect: { timeout: 10_000, lookup: policedLookup(() => addressPolicy) },
  // Time-outs are ours (per channel), not undici's defaults of 300 s.
  headersTimeout: 0,
  bodyTimeout: 0,
});

export interface UpstreamRequest {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** Milliseconds until the reply must be complete (or, for a stream, until each next piece). */
  timeoutMs: number;
  /** Aborted when nobody waits for the answer any more. */
  signal?: AbortSignal;
}

/** A reply whose body is still to be read, with the time-out still running. */
export interface OpenUpstreamReply {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: Dispatcher.ResponseData['body'];
  /** Restarts the time-out: called as a stream makes progress. */
  touch(): void;
  /** Turns an error thrown while reading into an `UpstreamError`. */
  failure(error: unknown): UpstreamError;
  /** Stops the time-out and detaches from the caller's signal. */
  done(): void;
}

const MAX_ERROR_BODY = 64 * 1024;

/**
 * Sends a JSON POST and resolves once a 2xx reply's headers arrived; any other status, a
 * time-out, an abort or a connection error rejects with an `UpstreamError`.
 */
export async function openUpstream(req: UpstreamRequest): Promise<OpenUpstreamReply> {
  const timeout = new AbortController();
  const combined = new AbortController();
  const timeoutError = () => new UpstreamError({ kind: 'timeout', message: `the upstream did not answer within ${req.timeoutMs} ms` });
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    if (req.timeoutMs > 0) timer = setTimeout(() => { timeout.abort(); combined.abort(timeoutError()); }, req.timeoutMs);
  };
  const onCallerAbort = () => combined.abort(new UpstreamError({ kind: 'cancelled', message: 'the request was cancelled' }));
  if (req.signal?.aborted) onCallerAbort();
  else req.signal?.addEventListener('abort', onCallerAbort, { once: true });
  const done = () => {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onCallerAbort);
  };
  const failure = (error: unknown): UpstreamError => {
    if (timeout.signal.aborted) return timeoutError();
    if (req.signal?.aborted) return new UpstreamError({ kind: 'cancelled', message: 'the request was cancelled', cause: error });
    if (error instanceof UpstreamError) return error;
    const code = (error as { code?: string }).code ?? '';
    return new UpstreamError({
      kind: 'connection',
      message: code === 'EUPSTREAMFORBIDDEN' ? (error as Error).message : `upstream connection failed: ${code || (error as Error).message}`,
      cause: error,
    });
  };

  arm();
  const url = new URL(req.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    // An address written in the URL is never looked up, so it is checked here.
    const refused = addressProblem(host, Number(url.port) || (url.protocol === 'https:' ? 443 : 80), addressPolicy);
    if (refused) {
      done();
      throw new UpstreamError({ kind: 'connection', message: `upstream address refused: ${refused}` });
    }
  }
  let response: Dispatcher.ResponseData;
  try {
    response = await request(req.url, {
      method: 'POST',
      headers: { ...req.headers, [HOP_HEADER]: '1' },
      body: JSON.stringify(req.body),
      signal: combined.signal,
      dispatcher: upstreamAgent,
    });
  } catch (error) {
    done();
    throw failure(error);
  }

  if (response.statusCode < 200 || response.statusCode >= 300) {
    let text = '';
    try {
      text = (await readAtMost(response.body, MAX_ERROR_BODY)).toString('utf8');
    } catch {
      /* the status says enough */
    }
    done();
    // What the upstream says may be relayed to the client; the router takes the channel's key
    // (and anything key-shaped) out of every failure, whichever provider raised it.
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    throw new UpstreamError({
      kind: 'http',
      status: response.statusCode,
      retryAfter: parseRetryAfter(response.headers['retry-after']),
      body,
      message: `upstream answered ${response.statusCode}${upstreamMessage(body, text)}`,
    });
  }

  return { status: response.statusCode, headers: response.headers, body: response.body, touch: arm, failure, done };
}

/** Sends a JSON POST and returns the parsed JSON reply (at most `upstreamLimits.maxReplyBytes`). */
export async function postUpstreamJson(req: UpstreamRequest): Promise<unknown> {
  const reply = await openUpstream(req);
  try {
    const text = (await readAtMost(reply.body, upstreamLimits.maxReplyBytes, () => tooLarge('reply', upstreamLimits.maxReplyBytes))).toString('utf8');
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new UpstreamError({ kind: 'protocol', message: 'the upstream reply is not JSON', cause: error });
    }
  } catch (error) {
    throw reply.failure(error);
  } finally {
    reply.done();
  }
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
