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
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest, type ResponsesRequest } from '@gateway/contracts';
import { orUnavailable, type ResponseStore, type StoredItem } from '@gateway/database';
import { cutShort } from '../http/client-signal.ts';
import { Followers } from './event-follower.ts';
import { DEFAULT_RUN_LEASE, holdRunLease, type RunLeaseOptions } from './run-lease.ts';

/**
 * The header that marks a gateway's own run of a background response: its id and the run's
 * random secret, so a client that sends it (knowing only the id) is never taken for the run.
 */
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
  /** Cancelled before its request was claimed: it is then never run. */
  cancelled?: boolean;
}

const CANCELLED = Symbol('the background response was cancelled');

export class BackgroundRuns {
  private readonly runs = new Map<string, { run: BackgroundRun; secret: string }>();
  readonly lease: RunLeaseOptions;
  /** The followers of background responses' streams on this gateway, at most a few per user and per response. */
  readonly followers = new Followers();

  constructor(lease: RunLeaseOptions = DEFAULT_RUN_LEASE) {
    this.lease = lease;
  }

  /** Starts the run; it ends on its own, its outcome stored. */
  start(app: FastifyInstance, caller: FastifyRequest, store: ResponseStore, run: BackgroundRun): void {
    const secret = randomBytes(16).toString('hex');
    this.runs.set(run.id, { run, secret });
    const release = holdRunLease(store, run.id, run.userId, this.lease, caller.log);
    const headers: Record<string, string> = { 'content-type': 'application/json', [BACKGROUND_HEADER]: `${run.id}.${secret}` };
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

  /**
   * The run a request of this gateway's own is, when its header names one of the key's user with
   * that run's secret; any other request's header is ignored. A run cancelled before it is
   * claimed (here, or in the store by another gateway) is refused: it must not run nor be charged.
   */
  async claim(request: FastifyRequest, userId: number, store: ResponseStore): Promise<BackgroundRun | undefined> {
    const header = request.headers[BACKGROUND_HEADER];
    if (typeof header !== 'string') return undefined;
    const [id = '', secret = ''] = header.split('.');
    const entry = this.runs.get(id);
    if (!entry || !sameSecret(entry.secret, secret) || entry.run.userId !== userId || entry.run.raw) return undefined;
    const { run } = entry;
    run.raw = request.raw;
    if (run.cancelled || (await orUnavailable(store.status(run.id, userId))) === 'cancelled') throw badRequest('the background response was cancelled before it ran', 'response_id');
    return run;
  }

  /** Ends the run of this gateway, if it has one; one not yet claimed never runs. */
  cancel(id: string): void {
    const run = this.runs.get(id)?.run;
    if (!run) return;
    run.cancelled = true;
    if (run.raw) cutShort(run.raw, CANCELLED);
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

function sameSecret(expected: string, given: string): boolean {
  return expected.length === given.length && timingSafeEqual(Buffer.from(expected), Buffer.from(given));
}
