import { STORE_PREFIX } from '@gateway/store';

/** Redis keys that routing adds to the store's (its change messages are the store's `Change`). */
export const routingKeys = {
  /**
   * Hash of one channel's health: consecutive failures, consecutive auth failures, cooldown end.
   * In the store's slot: a failure may disable the channel's record in the same script.
   */
  health: (channelId: number | string) => `${STORE_PREFIX}channel-health:${channelId}`,
  /** Sorted set of one channel's concurrency leases (lease id scored by expiry, epoch ms). */
  leases: (channelId: number | string) => `gw:channel-leases:${channelId}`,
  /** Pub/sub channel on which a lease given back on a full channel is announced (message: channel id). */
  leaseFreed: 'gw:channel-lease-freed',
  /**
   * Pub/sub channel on which a process that found a channel full with requests waiting says so
   * (message: "channel id, space, the process's lease id prefix"): `LeaseQueue.release`.
   */
  leaseWanted: 'gw:channel-lease-wanted',
  /**
   * String: the channel that served a conversation's last turn. Read and written alone, one
   * command each, so it needs no hash tag: conversations spread over a cluster's slots.
   */
  sticky: (conversation: string) => `gw:sticky:${conversation}`,
};
