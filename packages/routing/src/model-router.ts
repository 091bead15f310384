import { channelKeySecrets, clientCancelled, costOf, GatewayError, isBatchRank, modelNotFound, noChannel, redactUpstreamBody, redactUpstreamText, secretForms, timedOut, UpstreamError, upstreamFailure, type Channel, type ChannelType, type ModelCaller } from '@gateway/contracts';
import type { Logger } from '@gateway/log';
import type { ChannelCache } from './channel-cache.ts';
import type { ChannelHealth } from './channel-health.ts';
import { chargedUsage } from './cache-pricing.ts';
import { backoffMs, RetryAfterWindows } from './back-pressure.ts';
import type { ChannelLeases, Lease } from './channel-leases.ts';
import { candidateChannels, channelOrder, upstreamModelFor } from './choose-channel.ts';
import { decideOnFailure, exhaustedError, rateLimitedError } from './failure-policy.ts';
import type { LeaseQueue } from './lease-queue.ts';
import { buildRouterParts, startRouterParts, type RouterParts, type RouterPartsOptions } from './router-parts.ts';
import { attemptOf, type RouteRecord } from './route-record.ts';
import { endAttemptSpan, startAttemptSpan, startSlotWaitSpan } from './route-spans.ts';
import { planStickiness, preferFirst, stickyOutcome, type StickyOutcome, type StickyPlan } from './sticky-choice.ts';
import type { StickyChannels } from './sticky-channels.ts';
import type { UsageLedger, Usage } from './usage-ledger.ts';

/** One model request, whatever its provider. */
export interface ModelRequest {
  caller: ModelCaller;
  /** The channel types with a mapping for its operation (`channelTypesFor` in @gateway/providers). */
  types: readonly ChannelType[];
  /** The model name the client asked for. */
  model: string;
  /** The job's operation (`ModelOperation`; unset: a completion), named on its attempts' spans. */
  operation?: string;
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
  /** Filled as the request goes, for the request log (see `RouteRecord`). */
  record?: RouteRecord;
  /**
   * Awaits a wait for room (a full channel's lease, a rate-limited channel's rest) as time the
   * request is idle: its worker takes other jobs meanwhile (`JobContext.idle`).
   */
  idle?: <T>(wait: Promise<T>) => Promise<T>;
}

/** One channel to call, as the router chose it for an attempt. */
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
}

/**
 * One attempt on one channel, as `ModelRouter.attempts` hands it out: the caller calls the
 * upstream through `target`, then says how it went. The router never calls its caller.
 */
export interface RouteAttempt {
  readonly target: RouteTarget;
  /**
   * Output has reached the client (a stream's first piece): from now on a failure ends the
   * request instead of failing over.
   */
  commit(): void;
  /** The call answered: the channel is healthy, and `usage` is charged. */
  succeed(usage: Usage | undefined): void;
  /**
   * The call failed (an `UpstreamError`, or anything else the call threw). Resolves when the
   * request may go on to another channel (the caller takes the next attempt); rejects with the
   * request's error when it may not. After a commit, `usage` (what was used so far) is charged;
   * before one, only for a reply refused for its size (the upstream made it, and bills it).
   */
  fail(error: unknown, usage?: Usage): Promise<void>;
}

/** A `RouteAttempt` as the router keeps it: ended or not, and given up if its caller left it. */
interface ChannelAttempt extends RouteAttempt {
  readonly state: 'pending' | 'succeeded' | 'failed';
  /** Its lease given back, when its caller left without saying how it went. */
  abandon(): void;
}

export interface ModelRouterOptions extends RouterPartsOptions {
  /**
   * A stored channel key in clear (decrypted with SECRET_KEY). Throws when it cannot be; that
   * channel then fails like one whose upstream refused the key. Default: the key as stored.
   */
  revealKey?: (stored: string) => string;
  /** Time-out of a channel whose `timeout_ms` is 0. Default 60 s. */
  defaultTimeoutMs?: number;
  /** Told of upstream calls, failovers, channel health verdicts and usage, for metrics. */
  observer?: RoutingObserver;
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
 * Routing for every model worker, generic over what a call is: checks quota, chooses a
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
  readonly sticky: StickyChannels;
  private readonly parts: RouterParts;
  private readonly retryAfter = new RetryAfterWindows();
  private readonly settings: RouterSettings;

  constructor(parts: RouterParts, settings: RouterSettings) {
    this.parts = parts;
    ({ channels: this.channels, health: this.health, ledger: this.ledger, leases: this.leases, leaseQueue: this.leaseQueue, sticky: this.sticky } = parts);
    this.settings = settings;
  }

  /** A router on its own parts (`buildRouterParts`), subscribed and with the channel table loaded. */
  static async start(options: ModelRouterOptions): Promise<ModelRouter> {
    const parts = buildRouterParts(options);
    await startRouterParts(parts);
    return new ModelRouter(parts, {
      log: options.log,
      observer: options.observer ?? {},
      reveal: options.revealKey ?? ((stored) => stored),
      defaultTimeoutMs: options.defaultTimeoutMs ?? 60_000,
      cooldownMs: options.cooldownMs,
      authFailuresBeforeDisable: options.authFailuresBeforeDisable,
    });
  }

  /** Writes the usage not yet written, and stops. */
  async close(): Promise<void> {
    this.leases.close();
    this.parts.feed.close();
    this.parts.prices.close();
    await this.ledger.close();
  }

  /**
   * The attempts of one request, one channel each, until one succeeds or the request ends:
   *
   *   for await (const attempt of router.attempts(request)) {
   *     let answer;
   *     try { answer = await call(attempt.target); }
   *     catch (error) { await attempt.fail(error); continue; }   // rejects when the request must end
   *     attempt.succeed(usage);
   *     return answer;
   *   }
   *
   * Waits (up to the deadline) for a lease on a channel that is at its max_concurrency, and for
   * a channel that answered 429 to have rested. The request ends with a `GatewayError`: 429
   * insufficient_quota before any call; 404 for a model no channel serves; 503 when no channel
   * may take it; the caller's own 4xx as the upstream gave it; 429 when the rate-limited
   * channels would not rest before the deadline; or, when every candidate failed, 502 / 504
   * after the last failure. However it ends, its usage is charged and its hold on the quota
   * given back before the loop is left.
   *
   * Each turn: check the request is still wanted, find the channels ready to be called (or wait
   * for one to rest), take a lease on the best of them, and hand out the attempt on it.
   */
  async *attempts(request: ModelRequest): AsyncGenerator<RouteAttempt, void, undefined> {
    let current: ChannelAttempt | undefined;
    try {
      await this.ledger.assertQuota(request.caller);
      const { serving, candidates } = await this.candidatesFor(request);
      const attempts = new Attempts(candidates, this.retryAfter, await this.stickyPlan(request, serving, candidates));
      for (;;) {
        current = await this.nextAttempt(request, attempts);
        if (!current) continue;
        yield current;
        if (current.state === 'succeeded') return;
        if (current.state === 'pending') throw new Error('an attempt was neither succeeded nor failed before the next was asked for');
      }
    } finally {
      current?.abandon();
      // Charged and its hold on the quota given back in one step, before the answer leaves.
      await this.ledger.settle(request.caller);
    }
  }

  /** The next channel to call, leased; undefined when this turn found none ready yet (look again). */
  private async nextAttempt(request: ModelRequest, attempts: Attempts): Promise<ChannelAttempt | undefined> {
    assertStillWanted(request);
    const ready = await this.readyChannels(request, attempts);
    if (!ready) return undefined;
      const waitStarted = performance.now();
      const slotWait = startSlotWaitSpan();
      const { channel, lease } = await this.leaseQueue.acquire(
        preferFirst(channelOrder(ready, (id) => this.health.isCoolingDown(id, request.caller.userId)), attempts.preferred),
        {
          signal: request.signal, deadline: request.deadline, batch: isBatchRank(request.priority),
          tenant: { userId: request.caller.userId, tokenId: request.caller.tokenId }, idle: request.idle,
        },
      ).finally(() => slotWait.end());
      if (request.record) request.record.slotMs += performance.now() - waitStarted;
      if (attempts.restingUntil(channel.id, Date.now()) > Date.now()) {
        // It answered 429 to another request while this one waited for its lease.
        if (lease) this.release(lease, request.log);
        return undefined;
      }
      const attempt = this.attemptOn(request, channel, lease, attempts);
      try {
        attempt.target.key = this.revealKey(channel);
      } catch (error) {
        // A key that cannot be used fails this channel like a refused key: on to the next.
        await attempt.fail(error);
        return undefined;
      }
      return attempt;
  }

  /** The channels that serve the model whatever their state, and those that may serve the request; or 404 / 503. */
  private async candidatesFor(request: ModelRequest): Promise<{ serving: readonly Channel[]; candidates: Channel[] }> {
    const snapshot = await this.channels.current();
    const serving = snapshot.servingModel(request.types, request.model);
    if (serving.length === 0) {
      throw modelNotFound(`the model "${request.model}" does not exist or no channel serves it`);
    }
    const candidates = candidateChannels(serving, { types: request.types, model: request.model, group: request.caller.group });
    if (candidates.length === 0) {
      throw noChannel(`no channel is available for the model "${request.model}" right now`, Math.max(1, Math.ceil(this.settings.cooldownMs / 1000)));
    }
    return { serving, candidates };
  }

  /**
   * A conversation's turn goes back to the channel of its last turn while that channel may take
   * it (`planStickiness`), so the provider's prompt cache hits; a request of no conversation has
   * no plan.
   */
  private async stickyPlan(request: ModelRequest, serving: readonly Channel[], candidates: readonly Channel[]): Promise<StickyPlan | undefined> {
    const conversation = request.caller.conversation;
    if (!conversation || !this.sticky.enabled) return undefined;
    const remembered = await this.sticky.lastChannel(conversation);
    return planStickiness(remembered, serving, candidates, (id) => this.health.isCoolingDown(id, request.caller.userId));
  }

  /**
   * The untried channels that may be called now; undefined after waiting for a rate-limited one
   * to rest (the caller looks again). Throws when none is left, or none would rest in time.
   */
  private async readyChannels(request: ModelRequest, attempts: Attempts): Promise<Channel[] | undefined> {
    const now = Date.now();
    const open = attempts.open();
    if (open.length === 0) throw exhaustedError(attempts.lastFailure, attempts.tried.size);
    const ready = open.filter((c) => attempts.restingUntil(c.id, now) <= now);
    if (ready.length > 0) return ready;
    // Every channel left is rate-limited: wait for the first to rest, if the request may.
    const wakeAt = Math.min(...open.map((c) => attempts.restingUntil(c.id, now)));
    if (wakeAt + MIN_ATTEMPT_MS >= request.deadline) throw rateLimitedError(wakeAt - now);
    const jitter = Math.random() * Math.min(500, (wakeAt - now) / 10);
    const rest = pause(Math.min(wakeAt + jitter, request.deadline - MIN_ATTEMPT_MS) - now, request.signal);
    await (request.idle ? request.idle(rest) : rest);
    if (request.record) request.record.slotMs += Date.now() - now;
    return undefined;
  }

  /** An attempt on one leased channel: what its caller says of it decides the next turn. */
  private attemptOn(request: ModelRequest, channel: Channel, lease: Lease | undefined, attempts: Attempts): ChannelAttempt {
    attempts.tried.add(channel.id);
    let state: ChannelAttempt['state'] = 'pending';
    let committed = false;
    const started = performance.now();
    let firstByteMs: number | undefined;
    const target: RouteTarget = {
      channel,
      key: '',
      upstreamModel: upstreamModelFor(channel, request.model) ?? request.model,
      attempt: ++attempts.count,
      timeoutMs: Math.max(1, Math.min(this.channelTimeoutMs(channel), request.deadline - Date.now())),
      signal: request.signal,
    };
    const span = startAttemptSpan(request.operation, channel, target.upstreamModel, target.attempt);
    const record = request.record;
    const noteAttempt = (error?: UpstreamError) => {
      if (!record) return;
      const ms = performance.now() - started;
      record.attempts.push(attemptOf(channel, target.upstreamModel, ms, error));
      record.channelId = channel.id;
      record.upstreamModel = target.upstreamModel;
      record.upstreamMs += ms;
      record.firstByteMs = firstByteMs ?? (error ? undefined : ms);
      if (attempts.sticky) record.sticky = attempts.stickyOutcome(channel.id);
    };
    const end = (outcome: 'succeeded' | 'failed') => {
      if (state !== 'pending') throw new Error(`this attempt has already ${state}`);
      state = outcome;
      if (lease) this.release(lease, request.log);
    };
    return {
      target,
      get state() { return state; },
      commit: () => {
        committed = true;
        firstByteMs ??= performance.now() - started;
      },
      succeed: (usage) => {
        end('succeeded');
        noteAttempt();
        endAttemptSpan(span, { firstByteMs: firstByteMs ?? performance.now() - started, usage, upstreamModel: target.upstreamModel });
        this.settings.observer.upstreamCall?.(channel.id, (performance.now() - started) / 1000);
        this.health.noteSuccess(channel.id, request.caller.userId);
        if (attempts.sticky) void this.sticky.remember(request.caller.conversation!, channel.id);
        this.charge(request, channel, usage, performance.now() - started);
      },
      fail: async (thrown, usage) => {
        end('failed');
        // Whatever the upstream said (a 4xx body may be relayed) loses the channel's key here,
        // whichever provider or code path raised it.
        const error = thrown instanceof UpstreamError ? withoutSecrets(thrown, target.key) : thrown;
        const failure = error instanceof UpstreamError ? error : new UpstreamError({ kind: request.signal.aborted ? 'cancelled' : 'protocol', message: (error as Error)?.message ?? String(error) });
        noteAttempt(failure);
        endAttemptSpan(span, { firstByteMs, usage, upstreamModel: target.upstreamModel, error: failure });
        if (error instanceof UpstreamError && error.kind !== 'cancelled') {
          this.settings.observer.upstreamCall?.(channel.id, (performance.now() - started) / 1000, error.status ? String(error.status) : error.kind);
        }
        if (committed && usage) this.charge(request, channel, usage, performance.now() - started, false);
        else if (usage && billedThoughRefused(error)) {
          // The upstream made the reply, and bills it, though the gateway refused it for its size.
          this.charge(request, channel, usage, performance.now() - started, false);
          request.log.warn({ channelId: channel.id, promptTokens: usage.promptTokens, totalTokens: usage.totalTokens }, 'a reply refused for its size is charged its prompt');
        }
        if (request.signal.aborted || (error instanceof UpstreamError && error.kind === 'cancelled')) throw clientCancelled();
        if (!(error instanceof UpstreamError)) throw error;
        attempts.lastFailure = error;
        // Cut to the request's own deadline, a time-out is the request's: the channel had not yet
        // had its own timeout_ms (a burst of requests whose last leases came late cooled it).
        if (error.kind === 'timeout' && target.timeoutMs < this.channelTimeoutMs(channel)) throw timedOut('the request ran out of time');
        if (committed) await this.failAfterCommit(request, channel, error, attempts.count);
        await this.afterFailure(request, channel, error, attempts);
      },
      abandon: () => {
        if (state !== 'pending') return;
        end('failed');
        endAttemptSpan(span, { firstByteMs, upstreamModel: target.upstreamModel, error: upstreamFailure.cancelled('abandoned') });
      },
    };
  }

  /** A channel's own time-out for a call (`timeout_ms`, or the default). */
  private channelTimeoutMs(channel: Channel): number {
    return channel.timeout_ms > 0 ? channel.timeout_ms : this.settings.defaultTimeoutMs;
  }

  /**
   * Output already reached the client: no failover, but the cut stream counts against the
   * channel as the same failure before any output would (`decideOnFailure`): not at all when it
   * is the request's own (an error event for its input, a reply past the limits) or the
   * upstream's back-pressure, for its user alone when a request may have caused it.
   */
  private async failAfterCommit(request: ModelRequest, channel: Channel, error: UpstreamError, attempt: number): Promise<never> {
    const decision = decideOnFailure(error);
    if (decision.action === 'failover' && decision.counts) {
      const userId = decision.byRequest ? request.caller.userId : undefined;
      await this.health.recordFailure(channel.id, { auth: false, reason: 'stream cut short', userId }).catch(() => 'none' as const);
    }
    request.log.warn({ channelId: channel.id, attempt, kind: error.kind, status: error.status || undefined }, 'upstream failed after output reached the client');
    throw exhaustedError(error, 1);
  }

  /**
   * What a failed call means for the next turn (see `decideOnFailure`): the caller's own error
   * is returned (thrown) as it is; a 429 rests the channel; any other failure rules the channel
   * out for this request and counts against its health (cooldown, auto-disable).
   */
  private async afterFailure(request: ModelRequest, channel: Channel, error: UpstreamError, attempts: Attempts): Promise<void> {
    const decision = decideOnFailure(error);
    // The caller's own error says nothing of the channel: its health (a cooldown, a streak of
    // failures) stays as it was, where a caller's 4xx between failures used to wipe it.
    if (decision.action === 'return') throw decision.error;
    if (decision.action === 'back-off') {
      const until = attempts.rest(channel.id, decision.retryAfterMs);
      request.log.debug({ channelId: channel.id, attempt: attempts.count, restMs: until - Date.now() }, 'upstream rate-limited: the channel rests');
      return;
    }
    attempts.failed.add(channel.id);
    if (!decision.counts) {
      request.log.warn({ channelId: channel.id, attempt: attempts.count, kind: error.kind, status: error.status || undefined }, 'upstream call failed (not counted against the channel)');
      this.settings.observer.failover?.();
      return;
    }
    const verdict = await this.health.recordFailure(channel.id, {
      auth: decision.auth,
      userId: decision.byRequest ? request.caller.userId : undefined,
      reason: `auto-disabled: ${decision.reason} (refusing the channel's key) ${this.settings.authFailuresBeforeDisable} times in a row`,
    }).catch((e: unknown) => {
      request.log.warn({ err: e, channelId: channel.id }, 'could not record channel failure');
      return 'none' as const;
    });
    request.log.warn({ channelId: channel.id, attempt: attempts.count, kind: error.kind, status: error.status || undefined, verdict }, 'upstream call failed');
    const { observer, log } = this.settings;
    if (verdict === 'disabled') log.warn({ channelId: channel.id, reason: decision.reason }, 'channel auto-disabled');
    if (verdict === 'disabled') observer.autoDisable?.(channel.id);
    if (verdict === 'cooldown') observer.cooldown?.(channel.id);
    observer.failover?.();
  }

  private revealKey(channel: Channel): string {
    try {
      return this.settings.reveal(channel.key);
    } catch (error) {
      throw upstreamFailure.credentialRefused(`channel ${channel.id}'s key cannot be used: ${(error as Error).message}`);
    }
  }

  private release(lease: Lease, log: Logger): void {
    // Not awaited: the answer need not wait; a lease that is not given back runs out by itself.
    this.leaseQueue.release(lease).catch((error: unknown) => {
      log.warn({ reason: (error as Error).message, channelId: lease.channelId }, 'could not give a channel lease back');
    });
  }

  /** Charged off the reply path: the ledger writes it with the next flush. */
  private charge(request: ModelRequest, channel: Channel, reported: Usage | undefined, ms: number, healthy = true): void {
    // Cached prompt tokens at the channel's ratios (cache-pricing.ts): the log's quota is the charge.
    const usage = chargedUsage(reported ?? { totalTokens: 0 }, channel);
    // In money, at the model's price on this channel (price-store.ts), from the usage as reported.
    const prices = this.parts.prices.current;
    const priced = prices.priceOf(request.model, channel.id);
    const cost = priced && costOf(reported ?? { totalTokens: 0 }, priced.price, prices.groupRatio(request.caller.group));
    this.ledger.charge({ caller: request.caller, channelId: channel.id, usage, cost, responseTimeMs: ms, healthy });
    if (request.record) {
      request.record.usage = usage;
      request.record.cost = cost;
    }
    this.settings.observer.usage?.(usage.totalTokens);
  }
}

/** How a router behaves, besides its parts. */
export interface RouterSettings {
  log: Logger;
  observer: RoutingObserver;
  /** A stored channel key in clear (see `ModelRouterOptions.revealKey`). */
  reveal: (stored: string) => string;
  defaultTimeoutMs: number;
  cooldownMs: number;
  authFailuresBeforeDisable: number;
}

/** A reply the upstream made whole and the gateway refused for its size (`ofTheRequest`): the work was done. */
const billedThoughRefused = (error: unknown) => error instanceof UpstreamError && error.kind === 'protocol' && error.ofTheRequest;

/** One request's record of its attempts: which channels it tried, which failed, which rest. */
class Attempts {
  readonly tried = new Set<number>();
  /** Channels that failed in this request: never tried again by it. */
  readonly failed = new Set<number>();
  count = 0;
  lastFailure: UpstreamError | undefined;
  /** This request's own back-off from channels that answered 429 without Retry-After. */
  private readonly backoffs = new Map<number, { count: number; until: number }>();
  private readonly candidates: Channel[];
  private readonly retryAfter: RetryAfterWindows;
  /** The request's conversation's plan for the channel of its last turn; none outside a conversation. */
  readonly sticky: StickyPlan | undefined;

  constructor(candidates: Channel[], retryAfter: RetryAfterWindows, sticky?: StickyPlan) {
    this.candidates = candidates;
    this.retryAfter = retryAfter;
    this.sticky = sticky;
  }

  /** The channel of the conversation's last turn, offered first while it has not failed in this request. */
  get preferred(): Channel | undefined {
    return this.sticky && 'prefer' in this.sticky && !this.failed.has(this.sticky.prefer.id) ? this.sticky.prefer : undefined;
  }

  /** Whether the conversation stayed on its channel when `channelId` serves it, or why not. */
  stickyOutcome(channelId: number): StickyOutcome {
    const plan = this.sticky!;
    const preferred = 'prefer' in plan ? plan.prefer.id : undefined;
    return stickyOutcome(plan, channelId, {
      failed: preferred !== undefined && this.failed.has(preferred),
      resting: preferred !== undefined && this.restingUntil(preferred, Date.now()) > Date.now(),
    });
  }

  /** Candidates that have not failed in this request. */
  open(): Channel[] {
    return this.candidates.filter((c) => !this.failed.has(c.id));
  }

  /** Epoch ms until which a channel rests: the process-wide Retry-After, or this request's back-off. */
  restingUntil(channelId: number, now: number): number {
    return Math.max(this.retryAfter.restingUntil(channelId, now), this.backoffs.get(channelId)?.until ?? 0);
  }

  /** Rests a channel that answered 429: for its Retry-After (every request), else a back-off (this one). */
  rest(channelId: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return this.retryAfter.note(channelId, retryAfterMs);
    const count = (this.backoffs.get(channelId)?.count ?? 0) + 1;
    const until = Date.now() + backoffMs(count);
    this.backoffs.set(channelId, { count, until });
    return until;
  }
}

function assertStillWanted(request: ModelRequest): void {
  if (request.signal.aborted) throw clientCancelled();
  if (Date.now() >= request.deadline) throw timedOut('the request ran out of time');
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


/** The failure with the channel's key, and anything key-shaped, taken out of its message and body. */
function withoutSecrets(error: UpstreamError, key: string): UpstreamError {
  // The key as it is (however short), and the forms an upstream may reflect it in; for a
  // structured credential, each secret in it too.
  const secrets = key ? channelKeySecrets(key).flatMap((secret) => [secret, ...secretForms(secret, { anyCase: true })]) : [];
  return new UpstreamError({
    kind: error.kind,
    status: error.status || undefined,
    retryAfter: error.retryAfter,
    body: error.body === undefined ? undefined : redactUpstreamBody(error.body, secrets),
    message: redactUpstreamText(error.message, secrets),
    ofTheRequest: error.ofTheRequest,
    cause: error.cause,
  });
}
