import type { ErrorReply } from '@gateway/contracts';
import type { Redis } from './redis-connection.ts';
import { REPLY_STREAM_TTL_MS, ReplyType, replyStreamKey } from './reply-keys.ts';

const RETRY_FOR_MS = 10_000;
/** A reply stream's expiry is pushed back at most this often (a quarter of its TTL) by one worker. */
const REFRESH_TTL_EVERY_MS = REPLY_STREAM_TTL_MS / 4;

/**
 * The worker's side of the reply path: appends a job's result, error or stream chunk to the
 * reply stream of the ingress that waits. One copy per reply, deleted by the ingress as soon as
 * it reads it, and the whole stream expires if that ingress is gone.
 */
export class ReplySender {
  private readonly redis: Redis;
  /** Reply stream → when this worker last pushed its expiry back. */
  private readonly refreshed = new Map<string, number>();

  constructor(redis: Redis) {
    this.redis = redis;
  }

  result(replyTo: string, jobId: string, value: unknown): Promise<void> {
    return this.append(replyTo, jobId, ReplyType.result, JSON.stringify(value ?? null));
  }

  error(replyTo: string, jobId: string, error: ErrorReply): Promise<void> {
    return this.append(replyTo, jobId, ReplyType.error, JSON.stringify(error));
  }

  chunk(replyTo: string, jobId: string, chunk: string): Promise<void> {
    return this.append(replyTo, jobId, ReplyType.chunk, chunk);
  }

  /** Retries through a Redis blip for up to `RETRY_FOR_MS`: a reply must not be lost to one. */
  private async append(replyTo: string, jobId: string, type: string, data: string): Promise<void> {
    const key = replyStreamKey(replyTo);
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        // The expiry, when due, goes in the same write (auto-pipelining). No MULTI: should it be
        // lost to a blip, the retry appends the reply again, and the ingress ignores a second copy.
        const now = Date.now();
        const refreshTtl = now - (this.refreshed.get(key) ?? 0) >= REFRESH_TTL_EVERY_MS;
        const added = this.redis.xadd(key, '*', 'j', jobId, 't', type, 'd', data);
        if (refreshTtl) {
          await Promise.all([added, this.redis.pexpire(key, REPLY_STREAM_TTL_MS)]);
          if (this.refreshed.size > 10_000) this.refreshed.clear();
          this.refreshed.set(key, now);
        } else {
          await added;
        }
        return;
      } catch (error) {
        if (Date.now() - started > RETRY_FOR_MS) throw error;
        await new Promise((r) => setTimeout(r, Math.min(25 * 2 ** attempt, 500)));
      }
    }
  }
}
