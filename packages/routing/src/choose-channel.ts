/**
 * Which channel serves a request: the pure part of routing, with no I/O, so it can be tested
 * and reasoned about on its own.
 */
import { ChannelStatus, type Channel, type ChannelType } from '@gateway/contracts';

export interface ChannelQuery {
  /** The channel types with a mapping for the request's operation (failover may cross them). */
  types: readonly ChannelType[];
  /** The model name the client asked for. */
  model: string;
  /** The caller's group. */
  group: string;
}

/**
 * The model name to send upstream when `channel` serves `model`, or undefined when it does not.
 * A channel serves a model it lists, or one its `model_mapping` maps onto a model it lists.
 */
export function upstreamModelFor(channel: Channel, model: string): string | undefined {
  const mapped = channel.model_mapping?.[model];
  if (channel.models.includes(model)) return mapped || model;
  if (mapped && channel.models.includes(mapped)) return mapped;
  return undefined;
}

/** A channel's `group` is a comma-separated list of groups. */
export function servesGroup(channel: Channel, group: string): boolean {
  return channel.group.split(',').some((g) => g.trim() === group);
}

/** The channels that may take this request: enabled, of a type that can serve it, serving the model and the group. */
export function candidateChannels(servingModel: readonly Channel[], query: ChannelQuery): Channel[] {
  return servingModel.filter((c) => c.status === ChannelStatus.enabled && query.types.includes(c.type) && servesGroup(c, query.group));
}

/**
 * The next channel to try: never one in `exclude` (tried in this request); channels cooling
 * down only when no other is left; among the rest, the highest `priority`, and inside it a
 * weighted random pick by `weight` (a uniform pick when every weight is 0).
 */
export function pickChannel(
  candidates: readonly Channel[],
  exclude: ReadonlySet<number>,
  isCoolingDown: (channelId: number) => boolean,
  random: () => number = Math.random,
): Channel | undefined {
  const untried = candidates.filter((c) => !exclude.has(c.id));
  if (untried.length === 0) return undefined;
  const healthy = untried.filter((c) => !isCoolingDown(c.id));
  const pool = healthy.length > 0 ? healthy : untried;
  let top = -Infinity;
  for (const c of pool) if (c.priority > top) top = c.priority;
  const tier = pool.filter((c) => c.priority === top);
  const total = tier.reduce((sum, c) => sum + Math.max(0, c.weight), 0);
  if (total <= 0) return tier[Math.floor(random() * tier.length)];
  let point = random() * total;
  for (const c of tier) {
    point -= Math.max(0, c.weight);
    if (point < 0) return c;
  }
  return tier[tier.length - 1];
}

/**
 * Every channel of `candidates` in the order `pickChannel` would offer them: the first is the
 * normal choice, the next the one to use when it is full, and so on.
 */
export function channelOrder(
  candidates: readonly Channel[],
  isCoolingDown: (channelId: number) => boolean,
  random: () => number = Math.random,
): Channel[] {
  const order: Channel[] = [];
  const taken = new Set<number>();
  for (let c = pickChannel(candidates, taken, isCoolingDown, random); c; c = pickChannel(candidates, taken, isCoolingDown, random)) {
    order.push(c);
    taken.add(c.id);
  }
  return order;
}
