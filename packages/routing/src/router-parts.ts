import type { RedisClient as Redis } from '@gateway/config';
import type { Logger } from '@gateway/log';
import { ChannelStore, InvalidationFeed, PriceBook, touchesCallers, touchesChannels } from '@gateway/store';
import { ChannelCache } from './channel-cache.ts';
import { ChannelHealth, type ChannelHealthOptions } from './channel-health.ts';
import { ChannelLeases } from './channel-leases.ts';
import { LeaseQueue } from './lease-queue.ts';
import { routingKeys } from './routing-keys.ts';
import { StickyChannels } from './sticky-channels.ts';
import { UsageLedger } from './usage-ledger.ts';

/** What a `ModelRouter` works with, each shared by every request of the process. */
export interface RouterParts {
  /** The channel table, kept fresh by the invalidation feed. */
  channels: ChannelCache;
  /** Cooldowns and auto-disable, shared across processes. */
  health: ChannelHealth;
  /** Quota check and usage charge. */
  ledger: UsageLedger;
  /** Per-channel concurrency leases (max_concurrency), shared across processes. */
  leases: ChannelLeases;
  /** Requests of this process waiting for a lease on a full channel. */
  leaseQueue: LeaseQueue;
  /** The channel of each conversation's last turn, shared across processes. */
  sticky: StickyChannels;
  /** The price table, for each request's cost, kept fresh by the feed. */
  prices: PriceBook;
  /** Channel and health changes announced by other processes. */
  feed: InvalidationFeed;
  /** The subscriber connection the feed and lease releases arrive on. */
  subscriber: Redis;
}

export interface RouterPartsOptions extends ChannelHealthOptions {
  /** Command connection (shared with the worker). */
  redis: Redis;
  /** A connection of its own for the invalidation feed and lease releases (it enters subscribe mode). */
  subscriber: Redis;
  log: Logger;
  /** How old the in-process channel table may get before a background refresh. Default 5 s. */
  channelCacheMaxAgeMs?: number;
  /** How long a lease outlives a process that crashed holding it. Default 15 s. */
  leaseTtlMs?: number;
  /** How often charges are written to Redis (see `UsageLedgerOptions.flushMs`). Default 100 ms. */
  usageFlushMs?: number;
  /** How long a quota read answers later checks (see `UsageLedgerOptions.quotaCacheMs`). Default 250 ms. */
  quotaCacheMs?: number;
  /** How long a conversation's channel is remembered after its last turn (`StickyChannelsOptions`). Default 1 h, 5 min for an opening alone. */
  stickyTtlMs?: number;
  stickyOpeningTtlMs?: number;
}

/**
 * Builds a router's parts on one command connection and one subscriber, and wires them: the
 * feed invalidates the channel table or the quotas read, or passes health news on, a lease release wakes the
 * requests waiting for that channel, and a subscriber that reconnected wakes them all (releases
 * announced meanwhile are lost). `startRouterParts` subscribes and loads the channel table.
 */
export function buildRouterParts(options: RouterPartsOptions): RouterParts {
  const { redis, subscriber, log } = options;
  const health = new ChannelHealth(redis, options);
  const ledger = new UsageLedger(redis, {
    flushMs: options.usageFlushMs,
    quotaCacheMs: options.quotaCacheMs,
    onFlushError: (error) => log.error({ reason: error.message }, 'could not record usage; it is retried with the next flush, unless Redis refused it for its value (then it is dropped)'),
  });
  const channels = new ChannelCache(new ChannelStore(redis), {
    maxAgeMs: options.channelCacheMaxAgeMs,
    onLoad: (loaded) => health.load(loaded.map((c) => c.id)),
  });
  const leases = new ChannelLeases(redis, { ttlMs: options.leaseTtlMs });
  leases.onLost = (channelId, count) => {
    log.warn({ channelId, count }, 'channel leases expired before they were renewed (was the process stalled?)');
  };
  const leaseQueue = new LeaseQueue(leases);
  subscriber.on('message', (channel: string, message: string) => {
    if (channel === routingKeys.leaseFreed) leaseQueue.hear(Number(message));
    else if (channel === routingKeys.leaseWanted) leaseQueue.hearWanted(message);
  });
  subscriber.on('ready', () => leaseQueue.wakeAll());
  subscriber.on('close', () => leaseQueue.deaf());
  const feed = new InvalidationFeed(subscriber);
  feed.on((message) => {
    if (touchesCallers(message)) ledger.forgetQuotas();
    if (touchesChannels(message)) channels.invalidate();
    else health.hear(message);
  });
  const sticky = new StickyChannels(redis, { ttlMs: options.stickyTtlMs, openingTtlMs: options.stickyOpeningTtlMs });
  const prices = new PriceBook(redis, { feed });
  return { channels, health, ledger, leases, leaseQueue, sticky, prices, feed, subscriber };
}

export async function startRouterParts(parts: RouterParts): Promise<void> {
  await parts.feed.start();
  await parts.subscriber.subscribe(routingKeys.leaseFreed, routingKeys.leaseWanted);
  await parts.channels.current();
  await parts.prices.start();
}
