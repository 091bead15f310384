/**
 * How long a stream's upstream is still read after its client left, for the usage event only:
 * OpenAI-style upstreams send usage as the stream's last event, often a moment after the last
 * text. Within the grace the request is charged what the upstream reports; after it, by estimate.
 */
export const USAGE_GRACE_MS = 2000;

export interface UsageGrace {
  /** Aborts with the client's signal, or USAGE_GRACE_MS after it once the stream has begun. */
  signal: AbortSignal;
  /** The upstream stream has begun: from now on a client leaving starts the grace. */
  begun(): void;
  /** The request is over: no timer is left behind. */
  end(): void;
}

export function usageGrace(client: AbortSignal, graceMs = USAGE_GRACE_MS): UsageGrace {
  const controller = new AbortController();
  let streaming = false;
  let timer: NodeJS.Timeout | undefined;
  const onClientGone = () => {
    // Before the stream began there is no usage to wait for (waiting for a channel, say).
    if (!streaming) return controller.abort(client.reason);
    timer = setTimeout(() => controller.abort(client.reason), graceMs);
    timer.unref();
  };
  if (client.aborted) controller.abort(client.reason);
  else client.addEventListener('abort', onClientGone, { once: true });
  return {
    signal: controller.signal,
    begun: () => { streaming = true; },
    end: () => {
      clearTimeout(timer);
      client.removeEventListener('abort', onClientGone);
    },
  };
}
