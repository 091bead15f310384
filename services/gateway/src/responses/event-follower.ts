/**
 * A client following a streamed background response: the events recorded so far after the
 * number it gives (`starting_after`), then each new one as it is recorded, until the response
 * has ended, read from PostgreSQL, so any gateway serves it and a client whose connection
 * dropped resumes where it was. A response that failed ends with `response.failed` and `error`
 * events (one whose run was lost with its gateway too: run-lease.ts); one cancelled, or still
 * running when the request's time is up, just ends.
 */
import type { FastifyReply } from 'fastify';
import { orUnavailable, type ResponseStore } from '@gateway/database';
import { responsesEventStream } from './responses-event-stream.ts';
import { currentResponse, type RunLeaseOptions } from './run-lease.ts';
import { PerUserLimit } from '../intake/per-user-limit.ts';

/** Most followers of one user's streams, and of one response's, at once on this gateway: each polls PostgreSQL. */
export const FOLLOWERS_PER_USER = 4;
export const FOLLOWERS_PER_RESPONSE = 2;

/** The places followers take on this gateway: a 429 with Retry-After past either cap. */
export class Followers {
  private readonly perUser = new PerUserLimit(FOLLOWERS_PER_USER, 'streams of background responses followed');
  private readonly perResponse = new PerUserLimit(FOLLOWERS_PER_RESPONSE, 'followers of its stream', 'this response');

  /** One place for a follower of the user's response `id`, until the returned release is called. */
  take(userId: number, id: string): () => void {
    const user = this.perUser.take(userId);
    try {
      const response = this.perResponse.take(id);
      return () => {
        response();
        user();
      };
    } catch (error) {
      user();
      throw error;
    }
  }
}

const POLL_MS = 100;
const ENDED = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

/** Follows the response's events; `release` (of the place the caller took in `Followers`) is called when it ends. */
export async function followEvents(reply: FastifyReply, store: ResponseStore, id: string, userId: number, after: number, timeoutMs: number, lease: RunLeaseOptions, release: () => void): Promise<FastifyReply> {
  // The caller has checked the response is the user's, and a background one.
  try {
    return await followed(reply, store, id, userId, after, timeoutMs, lease);
  } finally {
    release();
  }
}

async function followed(reply: FastifyReply, store: ResponseStore, id: string, userId: number, after: number, timeoutMs: number, lease: RunLeaseOptions): Promise<FastifyReply> {
  let events = await orUnavailable(store.eventsAfter(id, userId, after));
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  const format = responsesEventStream();
  const deadline = Date.now() + timeoutMs;
  let last = after;
  try {
    while (!raw.destroyed && Date.now() < deadline) {
      for (const event of events) {
        raw.write(format.chunk(event.data));
        last = event.seq;
      }
      if (events.length === 0) {
        const found = await currentResponse(store, id, userId, lease);
        const status = found?.response.status;
        if (!status || ENDED.has(status)) {
          // Its events were all recorded before it ended: what is left is read once more.
          for (const event of await store.eventsAfter(id, userId, last)) raw.write(format.chunk(event.data));
          const error = found?.response.error as { code?: string; message?: string } | null | undefined;
          if (status === 'failed' && error) raw.write(failedEvents(found!.response, error, last));
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      events = await store.eventsAfter(id, userId, last);
    }
  } catch (error) {
    reply.log.warn({ err: error, response: id }, 'a background response\'s follower stopped');
  }
  raw.end();
  return reply;
}

function failedEvents(response: Record<string, unknown>, error: { code?: string; message?: string }, last: number): string {
  const failed = { type: 'response.failed', sequence_number: last + 1, response: { ...response, status: 'failed' } };
  const detail = { type: 'error', sequence_number: last + 2, error: { type: 'server_error', code: error.code ?? 'server_error', message: error.message ?? 'the response failed', param: null } };
  return `event: response.failed\ndata: ${JSON.stringify(failed)}\n\nevent: error\ndata: ${JSON.stringify(detail)}\n\n`;
}
