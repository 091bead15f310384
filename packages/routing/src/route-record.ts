import type { Channel, RequestAttempt, UpstreamError } from '@gateway/contracts';
import type { StickyOutcome } from './sticky-choice.ts';
import type { Usage } from './usage-ledger.ts';

/**
 * What the router learned about one request, for its row in the request log: each channel it
 * tried and why it left it, where the time went, and what was charged. Filled as the request
 * goes; the caller passes an empty one in `ModelRequest.record`.
 */
export interface RouteRecord {
  attempts: RequestAttempt[];
  /** The channel that answered, or the last one tried. */
  channelId?: number;
  upstreamModel?: string;
  /** Time spent waiting for a slot of a channel at its max_concurrency, or for a 429 to rest. */
  slotMs: number;
  /** Every upstream call's time. */
  upstreamMs: number;
  /** From the answering call's start to its first output (a stream's first chunk, or the whole reply). */
  firstByteMs?: number;
  /** What was charged to the key, the user and the channel. */
  usage?: Usage;
  /** What it cost, in nano-dollars (`costOf`); unset when its model has no price. */
  cost?: number;
  /** For a request of a conversation: whether it went back to the channel of the last turn, or why not. */
  sticky?: StickyOutcome;
}

export const newRouteRecord = (): RouteRecord => ({ attempts: [], slotMs: 0, upstreamMs: 0 });

/** One attempt as the log shows it: the status, or for a failure with none its kind, code and the upstream's host. */
export function attemptOf(channel: Channel, upstreamModel: string, ms: number, error?: UpstreamError): RequestAttempt {
  const attempt: RequestAttempt = { channel_id: channel.id, upstream_model: upstreamModel, ms: Math.round(ms) };
  if (!error) return { ...attempt, status: 200 };
  if (error.status) return { ...attempt, status: error.status, error: error.kind };
  const code = (error.cause as { code?: string } | undefined)?.code;
  let host: string | undefined;
  try {
    host = new URL(channel.base_url).host;
  } catch {
    host = undefined;
  }
  return { ...attempt, error: code ? `${error.kind} ${code}` : `${error.kind}: ${error.message.slice(0, 200)}`, ...(host ? { host } : {}) };
}

/** The request's record, kept in its job's facts (`JobContext.facts`) for the request log. */
export function routeRecordIn(facts: Record<string, unknown>): RouteRecord {
  return ((facts.route as RouteRecord | undefined) ??= newRouteRecord());
}
