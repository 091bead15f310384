/**
 * Background responses (`background: true`): answered at once with `status: "queued"`, stored,
 * then run by this gateway as a request of its own to `POST /v1/responses` (Fastify's `inject`),
 * so a background response is admitted, held, fairly queued, leased, logged and charged exactly
 * as one its client waits for, on any provider. Its status moves to `in_progress` with the
 * stream's first event, and to the final response (under the id its client was given) before
 * the run ends; a failure marks it `failed` with the error. `POST /v1/responses/{id}/cancel`
 * marks it `cancelled` and ends the run as a client's leaving would (its job is cancelled); a
 * run on another gateway is not reached, and only its result is discarded (a cancelled response
 * never changes again). While it runs, this gateway renews its lease (run-lease.ts): a run lost
 * with its gateway ends as `failed` when any gateway next reads it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ResponsesRequest } from '@gateway/contracts';
import type { ResponseStore, StoredItem } from '@gateway/database';
import { cutShort } from '../client-signal.ts';
import { DEFAULT_RUN_LEASE, holdRunLease, type RunLeaseOptions } from './run-lease.ts';

/** The header that marks a gateway's own run of a background response: its id, valid only for a run this gateway started. */
export const BACKGROUND_HEADER = 'x-gateway-background-response';

export interface BackgroundRun {
  id: string;
  userId: number;
  /** The request as it runs: its conversation made explicit, streamed. */
  request: ResponsesRequest;
  inputItems: StoredItem[];
  /** The conversation key its client's request was given: the run is that conversation's turn. */
  continues?: string;
  /** Whether its client streams it: its events are then recorded for its followers (event-log.ts). */
  streamed: boolean;
  /** The run's own request, once it has begun: what a cancel ends. */
  raw?: FastifyRequest['raw'];
}

const CANCELLED = Symbol('the background response was cancelled');

export class BackgroundRuns {
  private readonly runs = new Map<string, BackgroundRun>();
  readonly lease: RunLeaseOptions;

  constructor(lease: RunLeaseOptions = DEFAULT_RUN_LEASE) {
    this.lease = lease;
  }

  /** Starts the run; it ends on its own, its outcome stored. */
  start(app: FastifyInstance, caller: FastifyRequest, store: ResponseStore, run: BackgroundRun): void {
    this.runs.set(run.id, run);
    const release = holdRunLease(store, run.id, run.userId, this.lease, caller.log);
    const headers: Record<string, string> = { 'content-type': 'application/json', [BACKGROUND_HEADER]: run.id };
    for (const name of ['authorization', 'x-priority'] as const) {
      const value = caller.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    void app.inject({ method: 'POST', url: caller.url.replace(/\?.*$/, ''), headers, payload: JSON.stringify(run.request) })
      .then(async (reply) => {
        if (reply.statusCode === 200 && !reply.payload.includes('event: error')) return;
        await store.setStatus(run.id, run.userId, 'failed', failureOf(reply.payload));
      })
      .catch((error: unknown) => store.setStatus(run.id, run.userId, 'failed', { code: 'server_error', message: String(error) }))
      .catch((error: unknown) => caller.log.warn({ err: error, response: run.id }, 'a background response\'s failure could not be stored'))
      .finally(() => {
        release();
        this.runs.delete(run.id);
      });
  }

  /** The run a request of this gateway's own is, when its header names one of the key's user. */
  claim(request: FastifyRequest, userId: number): BackgroundRun | undefined {
    const id = request.headers[BACKGROUND_HEADER];
    const run = typeof id === 'string' ? this.runs.get(id) : undefined;
    if (!run || run.userId !== userId || run.raw) return undefined;
    run.raw = request.raw;
    return run;
  }

  /** Ends the run of this gateway, if it has one. */
  cancel(id: string): void {
    const run = this.runs.get(id);
    if (run?.raw) cutShort(run.raw, CANCELLED);
  }
}

/** The error of a run that failed: its JSON error body, or a stream's last `error` event. */
function failureOf(payload: string): { code: string; message: string } {
  const events = payload.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice('data: '.length));
  try {
    const body = JSON.parse(events.at(-1) ?? payload) as { error?: { code?: unknown; type?: unknown; message?: unknown } };
    return { code: String(body.error?.code ?? body.error?.type ?? 'server_error'), message: String(body.error?.message ?? 'the background response failed') };
  } catch {
    return { code: 'server_error', message: 'the background response failed' };
  }
}
