import { setTimeout as sleep } from 'node:timers/promises';
import { upstreamError, type ErrorReply } from '@gateway/contracts';
import { isRedisUnavailable, type Redis } from './redis-connection.ts';
import { REPLY_STREAM_TTL_MS, ReplyType, replyField, replyStreamKey, replyStreamTtlMs } from './reply-keys.ts';

const RETRY_FOR_MS = 10_000;
/** A reply stream's expiry is pushed back at most this often (a quarter of its TTL) by one worker. */
const REFRESH_TTL_EVERY_MS = REPLY_STREAM_TTL_MS / 4;
/** Past this many unwritten bytes for one ingress, a chunk's sender waits for the write. */
const MAX_UNWRITTEN_BYTES = 1024 * 1024;
/**
 * Characters of replies one entry (one XADD) carries at most; past it, the replies gathered go
 * out as several entries, one after another. ioredis builds a command as one string: replies of
 * 24 batch lines of 36 MB each, joined, passed V8's largest string and the worker died (a
 * `RangeError` thrown from ioredis's auto-pipelining, outside any handler). A reply larger than
 * this goes alone in its entry.
 */
export const MAX_ENTRY_CHARS = 8 * 1024 * 1024;
/** One reply's characters at most: a command of one larger would near V8's largest string. */
export const MAX_REPLY_CHARS = 256 * 1024 * 1024;

export interface ReplySenderOptions {
  /**
   * How long replies for one ingress are gathered into one stream entry: 0 for one event-loop
   * turn, otherwise at most this many ms. The first reply is never held longer. Default 0.
   */
  coalesceMs?: number;
  /**
   * How long a write of replies is retried through Redis being away, at least (default 10 s). A
   * job's result and error are retried further, to the job's deadline: one given up would leave its
   * request to time out, and a batch line to be sent again and run, and charged, a second time.
   */
  retryForMs?: number;
}

/**
 * Redis away, or refusing writes for a while (out of memory, loading its data, a replica before
 * its failover is done): a write that will pass once it is over.
 */
const isPassing = (error: unknown) =>
  isRedisUnavailable(error) || /^(OOM|LOADING|READONLY|BUSY|MASTERDOWN|MISCONF)\b/.test((error as { message?: string } | undefined)?.message ?? '');

/** Replies on their way to one ingress's stream: gathered, then written as one entry. */
class Outbox {
  fields: string[] = [];
  bytes = 0;
  scheduled = false;
  /** The last write, so the next one follows it (a retried entry never overtakes a later one). */
  written: Promise<void> = Promise.resolve();
  /** The entry now gathering is retried until then at least (its results' and errors' deadlines). */
  retryUntil = 0;
  /** Resolves when the entry now gathering has been written. */
  next: { promise: Promise<void>; resolve: () => void; reject: (error: Error) => void } = Promise.withResolvers<void>();
}

/**
 * The worker's side of the reply path: appends a job's result, error and stream chunks to the
 * reply stream of the ingress that waits. Replies for one ingress that come within one short
 * window (`coalesceMs`) go out as one entry (`XADD` with a field per reply: the reply's type and
 * job id, then its data), so 200 streams of 100 chunks a second cost a few hundred entries a
 * second, not 20,000. An ingress deletes an entry as soon as it has read it, and the whole stream
 * expires if that ingress is gone.
 */
export class ReplySender {
  private readonly redis: Redis;
  private readonly coalesceMs: number;
  private readonly retryForMs: number;
  private readonly outboxes = new Map<string, Outbox>();
  /** Reply stream → when this worker last pushed its expiry back. */
  private readonly refreshed = new Map<string, number>();
  /** Jobs with a chunk that could not be written: their result must not pretend otherwise. */
  private readonly broken = new Set<string>();

  constructor(redis: Redis, options: ReplySenderOptions = {}) {
    this.redis = redis;
    this.coalesceMs = options.coalesceMs ?? 0;
    this.retryForMs = options.retryForMs ?? RETRY_FOR_MS;
  }

  /**
   * Resolves once the result is in the ingress's stream, retried through Redis being away until
   * `deadline` (the job's); rejects when a chunk before it was lost.
   */
  result(replyTo: string, jobId: string, value: unknown, deadline = 0): Promise<void> {
    if (this.broken.delete(jobId)) return Promise.reject(new Error('a stream chunk of this job could not be written to Redis'));
    return this.add(replyTo, jobId, ReplyType.result, JSON.stringify(value ?? null), deadline);
  }

  /** Whether a stream chunk of the job could not be written (its result will fail). */
  lost(jobId: string): boolean {
    return this.broken.has(jobId);
  }

  /** Like `result`: retried until `deadline` (the job's). */
  error(replyTo: string, jobId: string, error: ErrorReply, deadline = 0): Promise<void> {
    this.broken.delete(jobId);
    return this.add(replyTo, jobId, ReplyType.error, JSON.stringify(error), deadline);
  }

  /**
   * Queues one stream chunk. Resolves at once while little is unwritten for that ingress (a lost
   * write fails the job's result instead); past MAX_UNWRITTEN_BYTES, once written.
   */
  chunk(replyTo: string, jobId: string, chunk: string): Promise<void> {
    const written = this.add(replyTo, jobId, ReplyType.chunk, chunk);
    const backlogged = (this.outboxes.get(replyTo)?.bytes ?? 0) > MAX_UNWRITTEN_BYTES;
    written.catch(() => this.broken.add(jobId));
    return backlogged ? written : Promise.resolve();
  }

  private add(replyTo: string, jobId: string, type: string, data: string, retryUntil = 0): Promise<void> {
    if (data.length > MAX_REPLY_CHARS) {
      return Promise.reject(upstreamError(`the reply is too large to relay (${data.length} characters; at most ${MAX_REPLY_CHARS})`));
    }
    let outbox = this.outboxes.get(replyTo);
    if (!outbox) {
      outbox = new Outbox();
      this.outboxes.set(replyTo, outbox);
    }
    // Full: what it gathered goes now, as an entry of its own, and this reply starts the next.
    if (outbox.fields.length > 0 && outbox.bytes + data.length > MAX_ENTRY_CHARS) this.send(replyTo, outbox);
    outbox.fields.push(replyField(type, jobId), data);
    outbox.bytes += data.length;
    outbox.retryUntil = Math.max(outbox.retryUntil, retryUntil);
    const written = outbox.next.promise;
    if (!outbox.scheduled) {
      outbox.scheduled = true;
      const box = outbox;
      const send = () => this.send(replyTo, box);
      if (this.coalesceMs > 0) setTimeout(send, this.coalesceMs);
      else setImmediate(send);
    }
    return written;
  }

  /** Takes what the outbox gathered and writes it, after the write before it. */
  private send(replyTo: string, outbox: Outbox): void {
    // Sent already, when it filled up before its turn came.
    if (outbox.fields.length === 0) return;
    const { fields, next, retryUntil } = outbox;
    outbox.fields = [];
    outbox.bytes = 0;
    outbox.retryUntil = 0;
    outbox.scheduled = false;
    outbox.next = Promise.withResolvers<void>();
    const written = outbox.written.then(() => this.append(replyTo, fields, retryUntil)).then(next.resolve, next.reject);
    outbox.written = written;
    // An idle ingress's outbox goes; a new one starts with its next reply. Idle means this was
    // its last write: were a later one chained meanwhile, a new outbox's first write could
    // overtake it and deliver a stream's chunks out of order.
    written.then(() => {
      if (outbox.written === written && !outbox.scheduled && this.outboxes.get(replyTo) === outbox) this.outboxes.delete(replyTo);
    });
  }

  /**
   * Retries through a Redis blip for `retryForMs`, and while Redis is away (or refusing writes
   * for a while) until `retryUntil` when later: a reply must not be lost to one. Another error
   * (the entry itself refused) is not waited out to the deadline: every later reply to this
   * ingress waits behind this write.
   */
  private async append(replyTo: string, fields: string[], retryUntil: number): Promise<void> {
    const key = replyStreamKey(replyTo);
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        // The expiry, when due, goes in the same write (auto-pipelining). No MULTI: should it be
        // lost to a blip, the retry appends the entry again, and the ingress ignores a second
        // result or error. A retry sets it again: the stream may have gone meanwhile (a restart,
        // or its ingress long gone), and the append would make a new one that never expires.
        const now = Date.now();
        const added = this.redis.xadd(key, '*', ...fields);
        if (attempt > 0 || now - (this.refreshed.get(key) ?? 0) >= REFRESH_TTL_EVERY_MS) {
          await Promise.all([added, this.redis.pexpire(key, replyStreamTtlMs(replyTo))]);
          if (this.refreshed.size > 10_000) this.refreshed.clear();
          this.refreshed.set(key, now);
        } else {
          await added;
        }
        return;
      } catch (error) {
        const giveUpAt = isPassing(error) ? Math.max(started + this.retryForMs, retryUntil) : started + this.retryForMs;
        if (Date.now() >= giveUpAt) throw error;
        await sleep(Math.min(25 * 2 ** attempt, 500));
      }
    }
  }
}
