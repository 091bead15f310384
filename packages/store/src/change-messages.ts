/**
 * What the store's change feed (`keys.invalidations`) says, as one discriminated union, typed
 * where a change is published and where it is heard. On the wire each is the short string it
 * has always been (`channels`, `token:<id>`, `user:<id>`, `channel-cooldown:<id>:<until>`, `*`),
 * so processes of two versions understand each other during a rolling upgrade.
 */
import type { RedisClient as Redis } from '@gateway/config';
import { keys } from './keys.ts';

export type Change =
  /** Anything may have changed (a reconnect lost messages, keys moved): drop every cache. */
  | { kind: 'everything' }
  /** The channel table. */
  | { kind: 'channels' }
  /** One API key (its limits, its status, its quota). */
  | { kind: 'token'; id: number }
  /** One user (its role, its status, its quota). */
  | { kind: 'user'; id: number }
  /** Prices or new-api's ratio options. */
  | { kind: 'prices' }
  /** A channel cools down until an epoch-ms time (routing's, on the same feed); for one user only when `userId` is given. */
  | { kind: 'channel-cooldown'; channelId: number; until: number; userId?: number };

export function encodeChange(change: Change): string {
  switch (change.kind) {
    case 'everything': return '*';
    case 'channels': return 'channels';
    case 'prices': return 'prices';
    case 'token': return `token:${change.id}`;
    case 'user': return `user:${change.id}`;
    case 'channel-cooldown': return `channel-cooldown:${change.channelId}:${change.until}${change.userId === undefined ? '' : `:${change.userId}`}`;
  }
}

/** The change a message announces; undefined for one this version does not know (ignored). */
export function decodeChange(message: string): Change | undefined {
  if (message === '*') return { kind: 'everything' };
  if (message === 'channels') return { kind: 'channels' };
  if (message === 'prices') return { kind: 'prices' };
  const record = /^(token|user):(\d+)$/.exec(message);
  if (record) return { kind: record[1] as 'token' | 'user', id: Number(record[2]) };
  const cooldown = /^channel-cooldown:(\d+):(\d+)(?::(\d+))?$/.exec(message);
  if (cooldown) return { kind: 'channel-cooldown', channelId: Number(cooldown[1]), until: Number(cooldown[2]), ...(cooldown[3] ? { userId: Number(cooldown[3]) } : {}) };
  return undefined;
}

export async function publishChange(redis: Redis, change: Change): Promise<void> {
  await redis.publish(keys.invalidations, encodeChange(change));
}

/** Whether a change may alter what a key or user may do (keys, users, quotas). */
export const touchesCallers = (change: Change) => change.kind === 'everything' || change.kind === 'token' || change.kind === 'user';
/** Whether a change may alter the channel table. */
export const touchesChannels = (change: Change) => change.kind === 'everything' || change.kind === 'channels';
/** Whether a change may alter a price. */
export const touchesPrices = (change: Change) => change.kind === 'everything' || change.kind === 'prices';
