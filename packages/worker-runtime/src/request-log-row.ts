/**
 * A model job's row in the request log, from its end (`JobEnd`) and what the router recorded
 * (`RouteRecord`, in the job's facts): one per request, whether it ran, failed, was cancelled or
 * was dropped unrun.
 */
import { CLIENT_CLOSED_STATUS, isBatchRank, routeOfPayload, type ModelCaller, type RequestLogRow } from '@gateway/contracts';
import type { JobEnd } from '@gateway/queue';
import type { RouteRecord } from '@gateway/routing';

/** What every model job payload has: who called, and the request (a Gemini job names its model and method apart). */
export interface ModelPayload {
  caller: ModelCaller;
  operation?: string;
  method?: string;
  model?: string;
  /** The door's request: OpenAI's names its model; Gemini's comes with the model of its path. */
  request: object;
}

/** The model the client asked for: a Gemini job names it apart, the others in their request. */
export const requestedModel = (payload: ModelPayload): string => payload.model ?? (payload.request as { model?: string }).model ?? '';

const STATUS_OF = { ok: 200, cancelled: CLIENT_CLOSED_STATUS, expired: 504, error: 500 } as const;

/** The job's text, cut: the prompt from its request, the reply from its whole result. */
const cut = (value: unknown, chars: number) => (value === undefined ? undefined : JSON.stringify(value).slice(0, chars));

export function requestLogRow(end: JobEnd<ModelPayload>, options: { contentChars: number }): RequestLogRow {
  const record = end.facts.route as RouteRecord | undefined;
  const { caller } = end.payload;
  const usage = record?.usage;
  const status = end.outcome === 'error' && end.error ? end.error.status : STATUS_OF[end.outcome];
  const errorCode = end.outcome === 'error' ? end.error?.code : end.outcome === 'cancelled' ? 'cancelled' : end.outcome === 'expired' ? 'timeout' : undefined;
  return {
    created_at: end.queuedAt,
    job_id: end.jobId,
    request_id: end.requestId,
    user_id: caller.userId,
    token_id: caller.tokenId,
    token_name: caller.tokenName ?? '',
    route: routeOfPayload(end.payload),
    model: requestedModel(end.payload),
    upstream_model: record?.upstreamModel,
    channel_id: record?.channelId,
    attempts: record?.attempts ?? [],
    status,
    error_code: errorCode,
    error_message: end.error?.message.slice(0, 1000),
    priority: isBatchRank(end.priority) ? 'batch' : 'interactive',
    // A batch line's job id is `batch_…:line:attempt`.
    batch_id: end.jobId.startsWith('batch_') ? end.jobId.slice(0, end.jobId.indexOf(':')) : undefined,
    streamed: end.stream,
    prompt_tokens: usage?.promptTokens ?? 0,
    completion_tokens: usage?.completionTokens ?? 0,
    total_tokens: usage?.totalTokens ?? 0,
    cache_read_tokens: usage?.cacheReadTokens,
    cache_write_tokens: usage?.cacheWriteTokens,
    sticky: record?.sticky,
    quota: usage?.totalTokens ?? 0,
    cost_nanos: record?.cost,
    queue_ms: Math.max(0, end.startedAt - end.queuedAt),
    slot_ms: record ? Math.round(record.slotMs) : undefined,
    first_byte_ms: record?.firstByteMs === undefined ? undefined : Math.round(record.firstByteMs),
    upstream_ms: record?.attempts.length ? Math.round(record.upstreamMs) : undefined,
    total_ms: Math.max(0, end.endedAt - end.queuedAt),
    trace_id: end.traceId,
    ...(options.contentChars > 0 ? { prompt: cut(end.payload.request, options.contentChars), reply: end.stream ? undefined : cut(end.result, options.contentChars) } : {}),
  };
}
