import type { Channel, ChannelType } from '@gateway/contracts';
import type { ChannelStore } from '@gateway/store';
import { upstreamModelFor } from './choose-channel.ts';

/** The channels as loaded at one moment, indexed by what routing looks up. */
export class ChannelSnapshot {
  readonly channels: readonly Channel[];
  readonly loadedAt: number;
  private readonly byModel = new Map<string, Channel[]>();

  constructor(channels: readonly Channel[], loadedAt = Date.now()) {
    this.channels = channels;
    this.loadedAt = loadedAt;
    for (const channel of channels) {
      const names = new Set([...channel.models, ...Object.keys(channel.model_mapping ?? {})]);
      for (const name of names) {
        if (upstreamModelFor(channel, name) === undefined) continue;
        const key = `${channel.type}\u0000${name}`;
        const list = this.byModel.get(key);
        if (list) list.push(channel);
        else this.byModel.set(key, [channel]);
      }
    }
  }

  /** Every channel of the types that serves the model, whatever its status or group. */
  servingModel(types: readonly ChannelType[], model: string): readonly Channel[] {
    if (types.length === 1) return this.byModel.get(`${types[0]}\u0000${model}`) ?? [];
    return types.flatMap((type) => this.byModel.get(`${type}\u0000${model}`) ?? []);
  }
}

export interface ChannelCacheOptions {
  /** A snapshot older than this is refreshed in the background while still being used. */
  maxAgeMs?: number;
  /** Runs after every load, e.g. to load the channels' health with them. */
  onLoad?: (channels: readonly Channel[]) => Promise<void>;
}

/**
 * The worker's in-process copy of the channel table, so choosing a channel costs no Redis round
 * trip. A change announced on the invalidation feed makes the copy stale at once: the next
 * request waits for a fresh load, so a channel disabled by an admin is never chosen after the
 * admin's call returned. A periodic refresh covers anything the feed missed.
 */
export class ChannelCache {
  private readonly store: ChannelStore;
  private readonly maxAgeMs: number;
  private readonly onLoad?: (channels: readonly Channel[]) => Promise<void>;
  private snapshot: ChannelSnapshot | undefined;
  /** Bumped by every invalidation; a load that started before the bump is stale on arrival. */
  private version = 0;
  private loadedVersion = -1;
  private loading: Promise<void> | undefined;

  constructor(store: ChannelStore, options: ChannelCacheOptions = {}) {
    this.store = store;
    this.maxAgeMs = options.maxAgeMs ?? 5000;
    this.onLoad = options.onLoad;
  }

  /** Marks the copy stale; wired to the invalidation feed. */
  invalidate(): void {
    this.version++;
  }

  /** The current channels: a fresh load when stale, else the copy (refreshed behind when old). */
  async current(): Promise<ChannelSnapshot> {
    while (!this.snapshot || this.loadedVersion !== this.version) {
      await this.load();
    }
    if (Date.now() - this.snapshot.loadedAt > this.maxAgeMs) this.load().catch(() => {});
    return this.snapshot;
  }

  private load(): Promise<void> {
    this.loading ??= (async () => {
      const version = this.version;
      try {
        const channels = await this.store.all();
        await this.onLoad?.(channels);
        this.snapshot = new ChannelSnapshot(channels);
        this.loadedVersion = version;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }
}
