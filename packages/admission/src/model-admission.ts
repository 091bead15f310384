import { badRequest, GatewayError, insufficientQuota, invalidApiKey, periodEnd, rateLimited, usdOf, worstCaseCostOf, type ModelCaller, type QueueName } from '@gateway/contracts';
import type { HoldRefusal, PriceBook, QuotaHolds } from '@gateway/store';
import type { KeyHolder } from './key-holder.ts';

/** Refuses a request its queue's backlog could not serve in time (the gateway's `QueueBacklog`). */
export interface BacklogGate {
  admit(queue: QueueName): void;
}
import type { FairShares, RemovedJob } from '@gateway/queue';
import type { KeyRateLimit } from './key-rate-limit.ts';

/** What admission decided for a request: how to enqueue it, and what it holds until it ends. */
export interface Admission {
  /** BullMQ priority: the request's place among every tenant's waiting work (`FairShares`). */
  priority: number;
  /** Whether it runs as batch work (the key's or user's priority, or lowered by `X-Priority`). */
  batch: boolean;
  /** It goes on BullMQ's wait list rather than by priority (`FairPlace.listed`). */
  listed: boolean;
  /** Its hold on its key's and user's quota and in-flight slots, if it needed one. */
  hold?: string;
  /**
   * When the job never ran (not enqueued, or removed while waiting): gives back what it held.
   * `removed.taken`: a worker took it once and freed its fair place already (its worker died).
   */
  unrun(removed?: Pick<RemovedJob, 'taken'>): void;
}

export interface ModelAdmissionOptions {
  rateLimit: KeyRateLimit;
  /** Unset: no backlog refuses (a batch line waits its turn instead). */
  backlog?: BacklogGate;
  holds: QuotaHolds;
  /** Prices, for the cost a request holds on a budget in money (unset: budgets hold nothing). */
  prices?: PriceBook;
  fairShares: FairShares;
  /** A hold outlives its request's deadline by this much before it runs out by itself. */
  holdGraceMs?: number;
}

/**
 * Everything decided before a model request is enqueued, so nothing is accepted that will be
 * refused: its priority (`X-Priority` may only lower the key's), whether the queue can still
 * serve it in time (503), the key's and the user's requests per minute (429), their caps on
 * requests in flight (429), and its worst case held on their quota (429). A key or user with no
 * limit costs no Redis call for them.
 */
export class ModelAdmission {
  private readonly options: ModelAdmissionOptions;

  constructor(options: ModelAdmissionOptions) {
    this.options = options;
  }

  /**
   * The part decidable from the headers, before the body is read: a key or user whose quota is
   * used up, or whose requests in flight are at their cap, is refused without its body.
   */
  async gate(holder: KeyHolder): Promise<void> {
    if (!needsHold(holder)) return;
    const refusal = await this.options.holds.check(holder);
    if (refusal) throw refusalError(refusal);
  }

  /**
   * Admits the request or throws. `priority`: the one it runs at (`priorityOf`); `worstCase`: the
   * most quota it may use; `deadline`: epoch ms.
   * `chargeOnce`: hold even for a key with no limit, because a request with a hold is charged
   * with its hold's release, once however often its job runs (a batch line, whose job a killed
   * worker leaves to run again); without one it is charged by its worker's next flush, which a
   * kill -9 loses. `model`: the model asked for, whose dearest price (on any channel) prices the
   * worst case held on a budget in money.
   */
  async admit(
    priority: 'interactive' | 'batch', holder: KeyHolder, queue: QueueName, worstCase: number, deadline: number,
    { chargeOnce = false, model }: { chargeOnce?: boolean; model?: string } = {},
  ): Promise<Admission> {
    const batch = priority === 'batch';
    await this.options.rateLimit.check(holder.tokenId, holder.rpmLimit);
    await this.options.rateLimit.checkUser(holder.userId, holder.userRpmLimit);
    let hold: string | undefined;
    if (chargeOnce || needsHold(holder)) {
      const ttlMs = Math.max(0, deadline - Date.now()) + (this.options.holdGraceMs ?? 60_000);
      const held = await this.options.holds.reserve(holder, holder.quotaLimited ? worstCase : 0, ttlMs, this.worstCaseCost(holder, worstCase, model));
      if (!('hold' in held)) throw refusalError(held);
      hold = held.hold;
    }
    let place;
    try {
      place = await this.options.fairShares.join(queue, holder, batch);
    } catch (error) {
      if (hold) void this.release(holder, hold);
      throw error;
    }
    // The queue's backlog refuses the tenants that make it: a tenant with nothing else waiting
    // is served next whatever the backlog (its rank), so another's burst never refuses it.
    if (this.options.backlog && !place.firstOfTenant) {
      try {
        this.options.backlog.admit(queue);
      } catch (error) {
        if (hold) void this.release(holder, hold);
        place.leave();
        throw error;
      }
    }
    return {
      priority: place.priority,
      listed: place.listed,
      batch,
      hold,
      unrun: (removed) => {
        if (hold) void this.release(holder, hold);
        if (!removed?.taken) place.leave();
      },
    };
  }

  /**
   * Gives back what a job removed unrun held, from the job's own data: for a remover that did not
   * admit it (a batch worker following the lines of a batch it took over). Its hold, and its fair
   * place unless a worker took it once (and freed it) before it went back to wait.
   */
  giveBack(queue: QueueName, removed: RemovedJob): void {
    const { tenant, priority } = removed.data;
    if (tenant && priority && !removed.taken) void this.options.fairShares.leave(queue, tenant, priority);
    const caller = (removed.data.payload as { caller?: Pick<ModelCaller, 'hold'> } | undefined)?.caller;
    const hold = removed.data.hold ?? caller?.hold;
    if (tenant && hold) void this.release(tenant, hold);
  }

  /** What the worst case may cost, held on a budget in money: 0 without a budget, or for a model with no price. */
  private worstCaseCost(holder: KeyHolder, worstCase: number, model: string | undefined): number {
    if (!holder.budgetLimited || model === undefined || !this.options.prices) return 0;
    const prices = this.options.prices.current;
    const price = prices.dearestOf(model);
    return price ? worstCaseCostOf(worstCase, price, prices.groupRatio(holder.group)) : 0;
  }

  private release(holder: Pick<KeyHolder, 'tokenId' | 'userId'>, hold: string): Promise<void> {
    // A hold that cannot be given back now runs out at its expiry.
    return this.options.holds.release(holder.tokenId, holder.userId, [hold]).catch(() => {});
  }
}

function needsHold(holder: KeyHolder): boolean {
  return holder.quotaLimited || holder.budgetLimited || holder.keyInFlightCap > 0 || holder.userInFlightCap > 0;
}

/** The key's priority, or batch when the header asks for it: a header may lower it, never raise it. */
export function priorityOf(header: string | string[] | undefined, own: 'interactive' | 'batch'): 'interactive' | 'batch' {
  const value = (Array.isArray(header) ? header[0] : header)?.trim().toLowerCase();
  if (!value) return own;
  if (value === 'batch') return 'batch';
  if (value === 'interactive') return own;
  throw badRequest('X-Priority must be "interactive" or "batch"', 'X-Priority');
}

function refusalError(refusal: HoldRefusal): GatewayError {
  switch (refusal.reason) {
    case 'key_in_flight':
      return rateLimited(`this API key already has ${refusal.cap} requests in flight, its most: retry when one ends`, 1);
    case 'user_in_flight':
      return rateLimited(`your account already has ${refusal.cap} requests in flight, its most: retry when one ends`, 1);
    case 'key_quota':
      return refusal.exhausted
        ? insufficientQuota('this API key has used up its quota; raise its remain_quota or make it unlimited')
        : rateLimited("the rest of this API key's quota is held by its requests in flight: retry when they end", 1);
    case 'user_quota':
      return refusal.exhausted
        ? insufficientQuota('your account has used up its quota; ask an administrator to raise it')
        : rateLimited("the rest of your account's quota is held by its requests in flight: retry when they end", 1);
    case 'key_budget':
    case 'user_budget': {
      const whose = refusal.reason === 'key_budget' ? 'this API key' : 'your account';
      if (!refusal.exhausted) return rateLimited(`the rest of ${whose}'s budget is held by its requests in flight: retry when they end`, 1);
      const resets = periodEnd(refusal.period);
      const when = resets === undefined ? 'it does not reset; ask an administrator to raise it' : `it resets at ${new Date(resets * 1000).toISOString()}`;
      return insufficientQuota(`${whose} has spent its budget of $${usdOf(refusal.maxBudget)}${PERIOD_WORDS[refusal.period]}; ${when}`);
    }
    default:
      return invalidApiKey('this API key no longer exists');
  }
}

const PERIOD_WORDS = { none: '', daily: ' for the day (UTC)', weekly: ' for the week (UTC, from Monday)', monthly: ' for the month (UTC)' } as const;
