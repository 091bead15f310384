import type { ChannelType } from '@gateway/contracts';
import { ChannelCache, servedModels, type ServedModel } from '@gateway/routing';
import { touchesChannels, type ChannelStore, type InvalidationFeed } from '@gateway/store';
import type { KeyHolder } from '../auth/api-key.ts';

/**
 * The models a key may use, for the model lists. The gateway reads the channel table as it
 * reads keys to authenticate: from an in-process copy the store's change feed keeps fresh, so
 * listing costs no queue hop and no Redis round trip, and a channel an admin disables
 * disappears from the list as soon as the announcement arrives.
 */
export class ModelCatalog {
  private readonly channels: ChannelCache;

  constructor(store: ChannelStore, feed: InvalidationFeed) {
    this.channels = new ChannelCache(store);
    feed.on((message) => {
      if (touchesChannels(message)) this.channels.invalidate();
    });
  }

  async list(holder: KeyHolder, types: readonly ChannelType[]): Promise<ServedModel[]> {
    if (holder.models !== 'all' && holder.models.length === 0) return [];
    const snapshot = await this.channels.current();
    return servedModels(snapshot.channels, { types, group: holder.group, allowed: holder.models === 'all' ? [] : holder.models });
  }

  /** One model, if the key may use it: the list's rules for that one name, without the list. */
  async find(holder: KeyHolder, types: readonly ChannelType[], model: string): Promise<ServedModel | undefined> {
    if (holder.models !== 'all' && !holder.models.includes(model)) return undefined;
    const snapshot = await this.channels.current();
    return servedModels(snapshot.channels, { types, group: holder.group, allowed: [model] })[0];
  }
}
