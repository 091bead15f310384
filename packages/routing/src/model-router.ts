import type { Redis } from 'ioredis';
import { GatewayError, type Channel, type ChannelType, type ModelCaller } from '@gateway/contracts';
import type { Logger } from '@gateway/log';
import { redactUpstreamBody, redactUpstreamText, UpstreamError } from '@gateway/providers';
import { ChannelStore, EVERYTHING, InvalidationFeed } from '@gateway/store';
import { ChannelCache } from './channel-cache.ts';
import { ChannelHealth, type ChannelHealthOptions } from './channel-health.ts';
import { backoffMs, RetryAfterWindows } from './back-pressure.ts';
import { ChannelLeases, type Lease } from './channel-leases.ts';
import { candidateChannels, channelOrder, upstreamModelFor } from './choose-channel.ts';
import { decideOnFailure, exhaustedError, rateLimitedError } from './failure-policy.ts';
import { LeaseQueue } from './lease-queue.ts';
import { routingKeys } from './routing-keys.ts';
import { UsageLedger, type Usage } from './usage-ledger.ts';

/** One model request, whatever its provider. */
export interface ModelRequest {
  caller: ModelCaller;
  /** The channel type that can serve it: `openai` for completions, `gemini` for audio. */
  type: ChannelType;
  /** The model name the client asked for. */
  model: string;
  /** Aborted when nobody waits for the answer any more. */
  signal: AbortSignal;
  /** Epoch ms after which nobody waits for the answer. */
  deadline: number;
  /**
   * The job's priority, lower first (BullMQ's convention; unset = 0, interactive): decides who
   * gets a lease first when requests wait for a full channel.
   */
  priority?: number;
  log: Logger;
}

/** One attempt on one channel, as handed to the caller's `call`. */
export interface RouteTarget {
  /** The chosen channel (its key encrypted, as stored). */
  channel: Channel;
  /** The channel's key in clear, for the upstream call alone: never log it. */
  key: string;
  /** The model name for this channel's upstream (after its model_mapping). */
  upstreamModel: string;
  /** 1 for the first channel tried, 2 for the first failover, … */
  attempt: number;
  /** Time the call may take: the channel's `timeout_ms`, cut to what is left of the request. */
  timeoutMs: number;
  /** Aborted when nobody waits for the answer any more. */
  signal: AbortSignal;
  /**
   * Says that output has reached the client (a stream's first chunk). From then on a failure
   * ends the request instead of failing over.
   */
  commit(): void;
  /** The usage to charge for this attempt; charged on success, and after a commit even on failure. */
  reportUsage(usage: Usage): void;
}

/** Calls the upstream through one channel; throws `UpstreamError` when the upstream failed. */
export type ChannelCall<T> = (target: RouteTarget) => Promise<T>;

export interface ModelRouterOptions extends ChannelHealthOptions {
  /**
   * A stored channel key in clear (decrypted with SECRET_KEY). Throws when it cannot be; that
   * channel then fails like one whose upstream refused the key. Default: the key as stored.
   */
  revealKey?: (stored: string) => string;
  /** Command connection (shared with the worker). */
  redis: Redis;
  /** A connection of its own for the invalidation feed (it enters subscribe mode). */
  subscriber: Redis;
  log: Logger;
  /** Time-out of a channel whose `timeout_ms` is 0. Default 60 s. */
  defaultTimeoutMs?: number;
  /** How old the in-process channel table may get before a background refresh. Default 5 s. */
  channelCacheMaxAgeMs?: number;
  /**
   * How long a channel lease (max_concurrency) outlives a process that crashed while holding
   * it; live processes renew theirs. Default 15 s.
   */
  leaseTtlMs?: number;
  /** Told of upstream calls, failovers, channel health verdicts and usage, for metrics. */
  observer?: RoutingObserver;
  /** How often charges are written to Redis (see `UsageLedgerOptions.flushMs`). Default 100 ms. */
  usageFlushMs?: number;
}

/** What the router reports as it works; every method optional. */
export interface RoutingObserver {
  /** One upstream call ended; `failure` is the HTTP status or the failure kind, unset on success. */
  upstreamCall?(channelId: number, seconds: number, failure?: string): void;
  /** A request moved on to another channel after a failure. */
  failover?(): void;
  cooldown?(channelId: number): void;
  autoDisable?(channelId: number): void;
  /** Tokens charged for one answer. */
  usage?(tokens: number): void;
}

/**
 * Routing for every model worker, generic over "call this channel": checks quota, chooses a
 * channel (enabled, of the type, serving the model and the caller's group; highest priority,
 * weighted random inside it; channels cooling down last), takes a lease on it when it limits
 * its concurrency (waiting for one when every channel is full), calls it, fails over to the next
 * untried channel on failures another channel could fix, waits out upstream 429s within the
 * deadline, keeps channel health, and charges the usage of the answer to the key, the user and
 * the channel.
 */
export class ModelRouter {
  readonly channels: ChannelCache;
  readonly health: ChannelHealth;
  readonly ledger: UsageLedger;
  readonly leases: ChannelLeases;
  readonly leaseQueue: LeaseQueue;
  private readonly retryAfter = new RetryAfterWindows();
  private readonly feed: InvalidationFeed;
  private readonly subscriber: Redis;
  private readonly defaultTimeoutMs: number;
  private readonly cooldownMs: number;
  private readonly authFailuresBeforeDisable: number;
  private readonly log: Logger;
  private readonly observer: RoutingObserver;
  private readonly reveal: (stored: string) => string;

  private constructor(options: ModelRouterOptions) {
    this.observer = options.observer ?? {};
    this.reveal = options.revealKey ?? ((stored) => stored);
    this.health = new ChannelHealth(options.redis, options);
    this.ledger = new UsageLedger(options.redis, {
      flushMs: options.usageFlushMs,
      onFlushError: (error) => this.log.error({ err: error.message }, 'could not record usage; it is retried with the next flush'),
    });
    this.channels = new ChannelCache(new ChannelStore(options.redis), {
      maxAgeMs: options.channelCacheMaxAgeMs,
      onLoad: (channels) => this.health.load(channels.map((c) => c.id)),
    });
    this.leases = new ChannelLeases(options.redis, { ttlMs: options.leaseTtlMs });
    this.leases.onLost = (channelId, count) => {
      this.log.warn({ channelId, count }, 'channel leases expired before they were renewed (was the process stalled?)');
    };
    this.leaseQueue = new LeaseQueue(this.leases);
    this.subscriber = options.subscriber;
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === routingKeys.leaseFreed) this.leaseQueue.hear(Number(message));
    });
    // Releases announced while the subscriber reconnected are lost: let every waiter look.
    this.subscriber.on('ready', () => this.leaseQueue.wakeAll());
    this.feed = new InvalidationFeed(options.subscriber);
    this.feed.on((message) => {
      if (message === 'channels' || message === EVERYTHING) this.channels.invalidate();
      else this.health.hear(message);
    });
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 60_000;
    this.cooldownMs = options.cooldownMs;
    this.authFailuresBeforeDisable = options.authFailuresBeforeDisable;
    this.log = options.log;
  }

  /** Subscribes to the invalidation feed and loads the channel table. */
  static async start(options: ModelRouterOptions): Promise<ModelRouter> {
    const router = new ModelRouter(options);
    await router.feed.start();
    await router.subscriber.subscribe(routingKeys.leaseFreed);
    await router.channels.current();
    return router;
  }

  /** Writes the usage not yet written, and stops. */
  async close(): Promise<void> {
    this.leases.close();
    this.feed.close();
    await this.ledger.close();
  }

  /**
   * Serves one request through `call`, failing over between channels, and charges its usage.
   * Waits (up to the deadline) for a lease on a channel that is at its max_concurrency, and for
   * a channel that answered 429 to have rested. Rejects with a `GatewayError`: 429
   * insufficient_quota before any call; 404 for a model no channel serves; 503 when no channel
   * may take it; the caller's own 4xx as the upstream gave it; 429 when the rate-limited
   * channels would not rest before the deadline; or, when every candidate failed, 502 / 504
   * after the last failure.
   */
  async run<T>(request: ModelRequest, call: ChannelCall<T>): Promise<T> {
    await this.ledger.assertQuota(request.caller);
    const snapshot = await this.channels.current();
    const serving = snapshot.servingModel(request.type, request.model);
    if (serving.length === 0) {
      throw new GatewayError({ status: 404, code: 'model_not_found', message: `the model "${request.model}" does not exist or no channel serves it`, param: 'model' });
    }
    const candidates = candidateChannels(serving, { type: request.type, model: request.model, group: request.caller.group });
    if (candidates.length === 0) {
      throw new GatewayError({
        status: 503,
        code: 'no_channel',
        message: `no channel is available for the model "${request.model}" right now`,
        retryAfter: Math.max(1, Math.ceil(this.cooldownMs / 1000)),
      });
    }

    /** Channels that failed in this request: never tried again by it. */
    const failed = new Set<number>();
    const tried = new Set<number>();
    /** This request's own back-off from channels that answered 429 without Retry-After. */
    const backoffs = new Map<number, { count: number; until: number }>();
    const restingUntil = (channelId: number, now: number) =>
      Math.max(this.retryAfter.restingUntil(channelId, now), backoffs.get(channelId)?.until ?? 0);
    let lastFailure: UpstreamError | undefined;
    let attempt = 0;
    for (;;) {
      if (request.signal.aborted) throw cancelled();
      const now = Date.now();
      if (now >= request.deadline) throw new GatewayError({ status: 504, code: 'timeout', message: 'the request ran out of time' });
      const open = candidates.filter((c) => !failed.has(c.id));
      if (open.length === 0) throw exhaustedError(lastFailure, tried.size);
      const ready = open.filter((c) => restingUntil(c.id, now) <= now);
      if (ready.length === 0) {
        // Every channel left is rate-limited: wait for the first to rest, if the request may.
        const wakeAt = Math.min(...open.map((c) => restingUntil(c.id, now)));
        if (wakeAt + MIN_ATTEMPT_MS >= request.deadline) throw rateLimitedError(wakeAt - now);
        const jitter = Math.random() * Math.min(500, (wakeAt - now) / 10);
        await pause(Math.min(wakeAt + jitter, request.deadline - MIN_ATTEMPT_MS) - now, request.signal);
        continue;
      }

      const { channel, lease } = await this.leaseQueue.acquire(
        channelOrder(ready, (id) => this.health.isCoolingDown(id)),
        { signal: request.signal, deadline: request.deadline, priority: request.priority },
      );
      if (restingUntil(channel.id, Date.now()) > Date.now()) {
        // It answered 429 to another request while this one waited for its lease.
        if (lease) this.release(lease, request.log);
        continue;
      }
      const left = request.deadline - Date.now();
      tried.add(channel.id);
      let committed = false;
      let usage: Usage | undefined;
      const target: RouteTarget = {
        channel,
        key: '',
        upstreamModel: upstreamModelFor(channel, request.model) ?? request.model,
        attempt: ++attempt,
        timeoutMs: Math.max(1, Math.min(channel.timeout_ms > 0 ? channel.timeout_ms : this.defaultTimeoutMs, left)),
        signal: request.signal,
        commit: () => { committed = true; },
        reportUsage: (u) => { usage = u; },
      };
      const started = performance.now();
      let value: T;
      try {
        target.key = this.revealKey(channel);
        value = await call(target);
      } catch (thrown) {
        // Whatever the upstream said (a 4xx body may be relayed) loses the channel's key here,
        // whichever provider or code path raised it.
        const error = thrown instanceof UpstreamError ? withoutSecrets(thrown, target.key) : thrown;
        if (lease) this.release(lease, request.log);
        if (error instanceof UpstreamError && error.kind !== 'cancelled') {
          this.observer.upstreamCall?.(channel.id, (performance.now() - started) / 1000, error.status ? String(error.status) : error.kind);
        }
        if (committed && usage) this.charge(request, channel.id, usage, performance.now() - started, false);
        if (request.signal.aborted || (error instanceof UpstreamError && error.kind === 'cancelled')) throw cancelled();
        if (!(error instanceof UpstreamError)) throw error;
        lastFailure = error;
        if (committed) {
          // Too late to fail over, but a stream cut short still counts against the channel's health.
          await this.health.recordFailure(channel.id, { auth: false, reason: 'stream cut short' }).catch(() => 'none' as const);
          request.log.warn({ channelId: channel.id, attempt, kind: error.kind, status: error.status || undefined }, 'upstream failed after output reached the client');
          throw exhaustedError(error, 1);
        }
        const decision = decideOnFailure(error);
        if (decision.action === 'return') {
          await this.health.recordSuccess(channel.id).catch(() => {});
          throw decision.error;
        }
        if (decision.action === 'back-off') {
          let until: number;
          if (decision.retryAfterMs !== undefined) {
            until = this.retryAfter.note(channel.id, decision.retryAfterMs);
          } else {
            const count = (backoffs.get(channel.id)?.count ?? 0) + 1;
            until = Date.now() + backoffMs(count);
            backoffs.set(channel.id, { count, until });
          }
          request.log.debug({ channelId: channel.id, attempt, restMs: until - Date.now() }, 'upstream rate-limited: the channel rests');
          continue;
        }
        failed.add(channel.id);
        const verdict = await this.health.recordFailure(channel.id, {
          auth: decision.auth,
          reason: `auto-disabled: ${decision.reason} (refusing the channel's key) ${this.authFailuresBeforeDisable} times in a row`,
        }).catch((e: unknown) => {
          request.log.warn({ err: (e as Error).message, channelId: channel.id }, 'could not record channel failure');
          return 'none' as const;
        });
        request.log.warn({ channelId: channel.id, attempt, kind: error.kind, status: error.status || undefined, verdict }, 'upstream call failed');
        if (verdict === 'disabled') this.log.warn({ channelId: channel.id, reason: decision.reason }, 'channel auto-disabled');
        if (verdict === 'disabled') this.observer.autoDisable?.(channel.id);
        if (verdict === 'cooldown') this.observer.cooldown?.(channel.id);
        this.observer.failover?.();
        continue;
      }
      if (lease) this.release(lease, request.log);
      this.observer.upstreamCall?.(channel.id, (performance.now() - started) / 1000);
      this.health.noteSuccess(channel.id);
      this.charge(request, channel.id, usage, performance.now() - started);
      return value;
    }
  }

  private revealKey(channel: Channel): string {
    try {
      return this.reveal(channel.key);
    } catch (error) {
      throw new UpstreamError({ kind: 'http', status: 401, message: `channel ${channel.id}'s key cannot be used: ${(error as Error).message}` });
    }
  }

  private release(lease: Lease, log: Logger): void {
    // Not awaited: the answer need not wait; a lease that is not given back runs out by itself.
    this.leases.release(lease).catch((error: unknown) => {
      log.warn({ err: (error as Error).message, channelId: lease.channelId }, 'could not give a channel lease back');
    });
  }

  /** Charged off the reply path: the ledger writes it with the next flush. */
  private charge(request: ModelRequest, channelId: number, usage: Usage | undefined, ms: number, healthy = true): void {
    this.ledger.charge({ caller: request.caller, channelId, usage: usage ?? { totalTokens: 0 }, responseTimeMs: ms, healthy });
    this.observer.usage?.(usage?.totalTokens ?? 0);
  }
}

/** A retry that would leave less than this before the deadline is not worth making. */
const MIN_ATTEMPT_MS = 250;

/** Resolves after `ms`, or at once when the signal aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

const cancelled = () => new GatewayError({ status: 499, code: 'cancelled', message: 'the client closed the request' });

/** The failure with the channel's key, and anything key-shaped, taken out of its message and body. */
function withoutSecrets(error: UpstreamError, key: string): UpstreamError {
  const secrets = key ? [key] : [];
  return new UpstreamError({
    kind: error.kind,
    status: error.status || undefined,
    retryAfter: error.retryAfter,
    body: error.body === undefined ? undefined : redactUpstreamBody(error.body, secrets),
    message: redactUpstreamText(error.message, secrets),
    cause: error.cause,
  });
}
