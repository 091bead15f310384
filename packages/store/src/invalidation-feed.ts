import { createRedisBeside, type RedisClient as Redis } from '@gateway/config';
import { keys } from './keys.ts';

/** Sent to listeners when the feed may have missed messages (a reconnect): drop everything. */
export const EVERYTHING = '*';

/** Whether a feed message may change what a key or user may do (keys, users, quotas). */
export const touchesCallers = (message: string) => message === EVERYTHING || message.startsWith('token:') || message.startsWith('user:');
/** Whether a feed message may change the channel table. */
export const touchesChannels = (message: string) => message === 'channels' || message === EVERYTHING;

/**
 * One process's subscription to the store's change announcements (`keys.invalidations`), fanned
 * out to its in-process caches. Writers publish `channels`, `token:<id>`, `user:<id>`, … ; after
 * a reconnect every listener hears `*`, since messages published meanwhile are lost.
 */
export class InvalidationFeed {
  private readonly subscriber: Redis;
  private readonly listeners: ((message: string) => void)[] = [];
  private subscribed = false;

  /** `subscriber` must be a connection of its own: it enters subscribe mode. */
  constructor(subscriber: Redis) {
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.invalidations) this.emit(message);
    });
    subscriber.on('ready', () => {
      // ioredis re-subscribes by itself after a reconnect; what was published meanwhile is gone.
      if (this.subscribed) this.emit(EVERYTHING);
    });
  }

  /** A feed on a subscriber connection of its own to the Redis `redis` talks to. */
  static beside(redis: Redis, connectionName: string): InvalidationFeed {
    // Blocking: a subscriber waits for Redis however long it is away, and queues its commands meanwhile.
    return new InvalidationFeed(createRedisBeside(redis, { name: connectionName, blocking: true }));
  }

  on(listener: (message: string) => void): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(keys.invalidations);
    this.subscribed = true;
  }

  close(): void {
    this.subscriber.disconnect();
  }

  private emit(message: string): void {
    for (const listener of this.listeners) listener(message);
  }
}
