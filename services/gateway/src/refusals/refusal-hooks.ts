/**
 * The hooks that hand a key-authenticated route's refusals to the `RefusalLog`: the error a
 * request was refused with (`onError`), and once its answer is sent (`onResponse`, off the
 * refusal's own path) the row, unless the request became a job, whose row its worker (or the
 * relay, for a job removed unrun) writes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayError } from '@gateway/contracts';
import { fromFastifyError, pathOf } from '../http/error-formats.ts';
import { refusedSpan } from '../models/relay-spans.ts';
import type { RefusalLog, RefusedCaller } from './refusal-log.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The error the request was answered with, on a route whose refusals are logged. */
    refusal: GatewayError | null;
    /** Its request log row is a job's (written by a worker or the relay), not a refusal's. */
    loggedAsJob: boolean;
  }
}

/** What a plugin whose routes' refusals are logged is given. */
export interface RefusalOptions {
  /** Rows for the requests these routes refuse, sampled (none: not logged). */
  refusals?: RefusalLog;
}

const GEMINI_METHODS = new Set(['generateContent', 'streamGenerateContent', 'embedContent', 'batchEmbedContents']);

export function logRefusals(app: FastifyInstance, refusals: RefusalLog | undefined): void {
  if (!refusals) return;
  app.addHook('onError', async (request, _reply, error) => {
    request.refusal = fromFastifyError(error);
  });
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode < 400 || request.loggedAsJob) return;
    const error = request.refusal;
    // A client that left was refused nothing (the relay logs one that left a job).
    if (error?.code === 'cancelled') return;
    const { route, model } = routeAndModel(request);
    const body = request.body as { stream?: unknown } | undefined;
    // Refused inside the relay: its spans are there already; before it, the refusal is its one span.
    const traceId = request.relayTrace ? request.relayTrace.traceId : refusedSpan(request, reply, route, model, error?.code ?? 'unknown');
    refusals.record({
      requestId: request.id,
      arrivedAt: Math.round(Date.now() - reply.elapsedTime),
      status: reply.statusCode,
      code: error?.code ?? 'unknown',
      param: error?.param,
      message: error?.message ?? `answered ${reply.statusCode}`,
      route,
      model,
      address: request.ip,
      caller: callerOf(request),
      streamed: body?.stream === true || route.endsWith(':streamGenerateContent'),
      totalMs: Math.round(reply.elapsedTime),
      traceId,
    });
  });
}

/** The key the request presented, as the key hooks read it (a Bearer header, Gemini's header, or the query string's refused `key`). */
function callerOf(request: FastifyRequest): RefusedCaller {
  const holder = request.keyHolder;
  if (holder) return { kind: 'key', userId: holder.userId, tokenId: holder.tokenId, tokenName: holder.tokenName ?? '', priority: holder.priority };
  const first = (value: unknown) => (Array.isArray(value) ? value[0] : value);
  const authorization = first(request.headers.authorization)?.trim();
  const query = request.query as Record<string, unknown> | undefined;
  const key = (authorization ? /^Bearer\s+(.+)$/i.exec(authorization)?.[1]?.trim() ?? authorization : undefined)
    ?? first(request.headers['x-goog-api-key'])?.trim()
    ?? first(request.headers['x-api-key'])?.trim()
    ?? first(query?.key) ?? first(query?.api_key);
  return typeof key === 'string' && key ? { kind: 'unknown-key', key } : { kind: 'none' };
}

/** The route as the log names it (Gemini's `{model}:{method}` spelled out) and the model asked for, where known. */
function routeAndModel(request: FastifyRequest): { route: string; model: string } {
  const route = request.routeOptions.url ?? pathOf(request.url);
  const params = (request.params ?? {}) as { model?: unknown; '*'?: unknown };
  const bodyModel = (request.body as { model?: unknown } | undefined)?.model;
  if (route.endsWith('/models/*') && typeof params['*'] === 'string') {
    const target = params['*'];
    const colon = target.lastIndexOf(':');
    const method = colon > 0 ? target.slice(colon + 1) : '';
    const known = GEMINI_METHODS.has(method);
    return { route: route.replace(/\*$/, known ? `{model}:${method}` : '{model}'), model: known ? target.slice(0, colon) : target };
  }
  return { route, model: typeof bodyModel === 'string' ? bodyModel : typeof params.model === 'string' ? params.model : '' };
}
