import { createRedisBeside, type RedisClient as Redis } from '@gateway/config';
import { decodeChange, type Change } from './change-messages.ts';
import { keys } from './keys.ts';

/**
 * One process's subscription to the store's change announcements (`keys.invalidations`), fanned
 * out to its in-process caches as `Change`s (change-messages.ts); after a reconnect every
 * listener hears `everything`, since messages published meanwhile are lost.
 */
export class InvalidationFeed {
  private readonly subscriber: Redis;
  private readonly listeners: ((change: Change) => void)[] = [];
  private subscribed = false;

  /** `subscriber` must be a connection of its own: it enters subscribe mode. */
  constructor(subscriber: Redis) {
    this.subscriber = subscriber;
    subscriber.on('message', (channel: string, message: string) => {
      const change = channel === keys.invalidations ? decodeChange(message) : undefined;
      if (change) this.emit(change);
    });
    subscriber.on('ready', () => {
      // ioredis re-subscribes by itself after a reconnect; what was published meanwhile is gone.
      if (this.subscribed) this.emit({ kind: 'everything' });
    });
  }

  /** A feed on a subscriber connection of its own to the Redis `redis` talks to. */
  static beside(redis: Redis, connectionName: string): InvalidationFeed {
    // Blocking: a subscriber waits for Redis however long it is away, and queues its commands meanwhile.
    return new InvalidationFeed(createRedisBeside(redis, { name: connectionName, blocking: true }));
  }

  on(listener: (change: Change) => void): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    await this.subscriber.subscribe(keys.invalidations);
    this.subscribed = true;
  }

  close(): void {
    this.subscriber.disconnect();
  }

  /**
   * A change this process has just seen made, heard by its own listeners at once: the
   * announcement through Redis comes on a connection of its own, and may be read after the
   * answer to the request that made the change (a model list right after disabling a channel
   * still showed it).
   */
  heardHere(change: Change): void {
    this.emit(change);
  }

  private emit(change: Change): void {
    for (const listener of this.listeners) listener(change);
  }
}
