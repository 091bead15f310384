/**
 * A background response's run lease: the gateway running it renews it in PostgreSQL every
 * `renewMs` (`ResponseStore.renewRun`); a response still queued or in progress whose lease is
 * older than `staleMs` lost its run (its gateway was killed, or lost PostgreSQL for that long),
 * and the next read of it, on any gateway, ends it as `failed` with an error that says so, so no
 * response stays in progress forever. A run is never resumed elsewhere: it held a job whose
 * waiter is gone, and its client can ask again.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ResponseStore, StoredResponse } from '@gateway/database';

export interface RunLeaseOptions {
  /** How often a running gateway renews its runs' leases. Default 2 s. */
  renewMs: number;
  /** A lease older than this is a run gone. Default 10 s: several renewals missed, not one slow query. */
  staleMs: number;
}

export const DEFAULT_RUN_LEASE: RunLeaseOptions = { renewMs: 2_000, staleMs: 10_000 };

/** The error a response whose run was lost ends with. */
export function runLostError(lease: RunLeaseOptions): { code: string; message: string } {
  return {
    code: 'server_error',
    message: `the gateway running this background response stopped before it ended (no sign of its run for ${Math.round(lease.staleMs / 1000)} s): create the response again`,
  };
}

/** Renews the run's lease at once and then every `renewMs`, until the returned function is called. */
export function holdRunLease(store: ResponseStore, id: string, userId: number, lease: RunLeaseOptions, log: FastifyBaseLogger): () => void {
  const renew = () => store.renewRun(id, userId).catch((error: unknown) => log.warn({ err: error, response: id }, 'a background response\'s run lease could not be renewed'));
  void renew();
  const timer = setInterval(renew, lease.renewMs);
  timer.unref();
  return () => clearInterval(timer);
}

const RUNNING = new Set(['queued', 'in_progress']);

/** A user's stored response as it is now: one whose background run was lost is ended as failed first. */
export async function currentResponse(store: ResponseStore, id: string, userId: number, lease: RunLeaseOptions): Promise<StoredResponse | undefined> {
  const found = await store.get(id, userId);
  if (found?.response.background !== true || !RUNNING.has(found.response.status)) return found;
  return (await store.failAbandoned(id, userId, lease.staleMs, runLostError(lease))) ? store.get(id, userId) : found;
}
