/**
 * One row of the request log (see packages/database/migrations/2_request-log.sql): what a model
 * request asked, where it went, how it ended, what it used and where its time went. Written by
 * whichever process ended the request; never a key, a channel key or (unless LOG_CONTENT_CHARS
 * asks for it) a prompt or a reply.
 */
import { routeOfOperation } from './model-endpoints.ts';

/** One channel a request tried, in order. */
export interface RequestAttempt {
  channel_id: number;
  upstream_model: string;
  /** The upstream's HTTP status, when it answered one. */
  status?: number;
  /** Why the channel was left: the failure's kind and, for a connection failure, its code (ECONNREFUSED, …). */
  error?: string;
  /** The upstream's host, for a failure that never reached an HTTP answer. */
  host?: string;
  ms: number;
}

export interface RequestLogRow {
  /** Epoch ms the request arrived (its job was queued). */
  created_at: number;
  /**
   * The request's own id (its job's): with created_at, the row's key. A job run again after its
   * worker died writes the same row again.
   */
  job_id: string;
  /** The id the client saw in X-Request-Id: its own, when it sent one, so not unique. */
  request_id: string;
  user_id: number;
  token_id: number;
  token_name: string;
  /** The route the client called, e.g. `/v1/chat/completions`. */
  route: string;
  /** The model the client asked for. */
  model: string;
  upstream_model?: string;
  /** The channel that answered (or the last one tried). */
  channel_id?: number;
  attempts: RequestAttempt[];
  /** The HTTP status the client got (499 when it left first). */
  status: number;
  error_code?: string;
  error_message?: string;
  priority: 'interactive' | 'batch';
  batch_id?: string;
  streamed: boolean;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Prompt tokens the provider read from its prompt cache, and wrote to it, where it reported them. */
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  /**
   * For a turn of a conversation (`ModelCaller.conversation`): `new` (no channel remembered),
   * `kept` (served by the channel of its last turn), or `moved:<reason>` (`MoveReason` in
   * @gateway/routing: gone, disabled, unhealthy, outranked, full, rate-limited, failed).
   */
  sticky?: string;
  /** Quota charged to the key, the user and the channel. */
  quota: number;
  /**
   * What it cost, in whole nano-dollars (`costOf`, at its model's price on the channel that
   * answered); unset when the model had no price, or the request was refused or never answered.
   */
  cost_nanos?: number;
  /** From queued to taken by a worker. */
  queue_ms?: number;
  /** Waiting for a slot of a channel at its max_concurrency. */
  slot_ms?: number;
  /** From the upstream call's start to its first byte (a stream's first chunk, or the whole reply). */
  first_byte_ms?: number;
  /** The upstream calls' time, every attempt included. */
  upstream_ms?: number;
  total_ms: number;
  prompt?: string;
  reply?: string;
  /**
   * Requests the row stands for: 1, except for a refusal's row, which counts the refusals of its
   * credential (or address), status and reason within a window (the gateway's `RefusalLog`).
   */
  count?: number;
  /** The client's address, on a refusal's row. */
  client_ip?: string;
  /** On a refusal's row for a key the gateway does not know: its mask and a short hash, never the key; `*` for many. */
  credential?: string;
  /** The id of the request's OpenTelemetry trace (32 hex digits), when tracing is on and it was sampled. */
  trace_id?: string;
}

/**
 * The route a model job's payload came by: its operation, or for a payload without one the
 * queue's first (a Gemini call names its method; anything else is a completion).
 */
export function routeOfPayload(payload: { operation?: string; method?: string }): string {
  if (payload.method) return routeOfOperation[payload.method] ?? payload.method;
  if (payload.operation) return routeOfOperation[payload.operation] ?? payload.operation;
  return routeOfOperation.completions!;
}

/** A status the log gives a request whose client left before its answer (nginx's convention). */
export const CLIENT_CLOSED_STATUS = 499;
