/**
 * Whether a conversation's next turn may go back to the channel that served its last one: the
 * pure part of stickiness, with no I/O (`sticky-channels.ts` remembers the channel in Redis).
 */
import { ChannelStatus, type Channel } from '@gateway/contracts';

/**
 * Why a conversation left the channel of its last turn, as the request log shows it
 * (`moved:<reason>`):
 * - `gone`: the channel was deleted, or no longer serves the model (or the caller's group);
 * - `disabled`: an administrator, or its upstream refusing its key, disabled it;
 * - `unhealthy`: it cools down after failing;
 * - `outranked`: a channel of a higher priority can take the request (priority is the
 *   operator's order of preference, which stickiness never overrides; weights it does);
 * - `full`: it was at its max_concurrency when the request came, and another had room;
 * - `rate-limited`: it rests after answering 429;
 * - `failed`: it failed this request, which failed over as it always does.
 */
export type MoveReason = 'gone' | 'disabled' | 'unhealthy' | 'outranked' | 'full' | 'rate-limited' | 'failed';

/**
 * A request's stickiness, in its log row: `new` for a conversation with no channel remembered,
 * `kept` when it went back to it, `moved:<reason>` when it did not.
 */
export type StickyOutcome = 'new' | 'kept' | `moved:${MoveReason}`;

/** What to do with the remembered channel, before any lease is asked for. */
export type StickyPlan = { prefer: Channel } | { outcome: StickyOutcome };

/**
 * The plan for a conversation whose last turn `remembered` served (undefined: none remembered):
 * prefer it when it still serves the request (among `candidates`, the enabled channels of the
 * model and group), is healthy and is of the highest priority among the healthy candidates.
 * Whether it has room is learnt when its lease is asked for (`stickyOutcome`).
 */
export function planStickiness(
  remembered: number | undefined,
  serving: readonly Channel[],
  candidates: readonly Channel[],
  isCoolingDown: (channelId: number) => boolean,
): StickyPlan {
  if (remembered === undefined) return { outcome: 'new' };
  const channel = candidates.find((c) => c.id === remembered);
  if (!channel) {
    const known = serving.find((c) => c.id === remembered);
    return { outcome: known && known.status !== ChannelStatus.enabled ? 'moved:disabled' : 'moved:gone' };
  }
  if (isCoolingDown(channel.id)) return { outcome: 'moved:unhealthy' };
  const healthy = candidates.filter((c) => !isCoolingDown(c.id));
  if (healthy.some((c) => c.priority > channel.priority)) return { outcome: 'moved:outranked' };
  return { prefer: channel };
}

/**
 * Puts the preferred channel first in the choice order (`channelOrder`), when it is in it: the
 * lease queue then takes it when it has room, and the next in order when it is full.
 */
export function preferFirst(order: readonly Channel[], prefer: Channel | undefined): Channel[] {
  if (!prefer || !order.some((c) => c.id === prefer.id)) return [...order];
  return [prefer, ...order.filter((c) => c.id !== prefer.id)];
}

/** How the plan turned out once `servedBy` was chosen: kept, or why the preferred channel was not. */
export function stickyOutcome(plan: StickyPlan, servedBy: number, why: { failed: boolean; resting: boolean }): StickyOutcome {
  if ('outcome' in plan) return plan.outcome;
  if (plan.prefer.id === servedBy) return 'kept';
  if (why.failed) return 'moved:failed';
  return why.resting ? 'moved:rate-limited' : 'moved:full';
}
