/**
 * Upstream 429s as back-pressure: how long a rate-limited channel rests before it is called
 * again. A Retry-After is the upstream speaking about the channel (its key), so it holds for
 * every request of the process; without one, each request backs off on its own, exponentially
 * with jitter, so that waiting requests do not all come back at the same moment.
 */

/** First back-off after a 429 without Retry-After; doubles with each further 429 of the request. */
export const BACKOFF_BASE_MS = 500;
/** The longest back-off without Retry-After. */
export const BACKOFF_MAX_MS = 8000;

/**
 * Milliseconds to wait after the `n`-th 429 (1-based) a request got from a channel without a
 * Retry-After: exponential, "equal jitter" (half fixed, half random).
 */
export function backoffMs(n: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, n - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * Until when each channel asked (with Retry-After) not to be called, shared by the requests of
 * this process. A later, shorter Retry-After does not shorten a window already running.
 */
export class RetryAfterWindows {
  private readonly until = new Map<number, number>();

  note(channelId: number, retryAfterMs: number, now = Date.now()): number {
    const end = Math.max(this.until.get(channelId) ?? 0, now + retryAfterMs);
    this.until.set(channelId, end);
    return end;
  }

  /** Epoch ms at which the channel may be called again; 0 when it may be now. */
  restingUntil(channelId: number, now = Date.now()): number {
    const end = this.until.get(channelId);
    if (end === undefined) return 0;
    if (end <= now) {
      this.until.delete(channelId);
      return 0;
    }
    return end;
  }
}
