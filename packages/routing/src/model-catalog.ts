/**
 * Which models a caller may list: the pure part of the model lists (`GET /v1/models`,
 * `GET /v1beta/models`), with the same rules routing uses, so a listed model is one a request
 * can reach and an unlisted one is not.
 */
import { ChannelStatus, type Channel, type ChannelType } from '@gateway/contracts';
import { servesGroup, upstreamModelFor } from './choose-channel.ts';

export interface CatalogQuery {
  /** The wire format: only channels of these types serve it. */
  types: readonly ChannelType[];
  /** The caller's group. */
  group: string;
  /** The key's `models` restriction; empty means every model. */
  allowed: readonly string[];
}

export interface ServedModel {
  /** The name a client sends (a listed model or a `model_mapping` alias). */
  id: string;
  /** Unix seconds: when the oldest channel serving it was created. */
  created: number;
  /** The types of the channels that serve it, sorted: what the request is relayed to. */
  types: ChannelType[];
}

/** Every model an enabled channel of the types serves for the group, sorted by name. */
export function servedModels(channels: readonly Channel[], query: CatalogQuery): ServedModel[] {
  const served = new Map<string, { created: number; types: Set<ChannelType> }>();
  for (const channel of channels) {
    if (channel.status !== ChannelStatus.enabled || !query.types.includes(channel.type) || !servesGroup(channel, query.group)) continue;
    for (const name of new Set([...channel.models, ...Object.keys(channel.model_mapping ?? {})])) {
      if (upstreamModelFor(channel, name) === undefined) continue;
      if (query.allowed.length > 0 && !query.allowed.includes(name)) continue;
      const entry = served.get(name);
      if (entry) {
        entry.created = Math.min(entry.created, channel.created_time);
        entry.types.add(channel.type);
      } else {
        served.set(name, { created: channel.created_time, types: new Set([channel.type]) });
      }
    }
  }
  return [...served].map(([id, { created, types }]) => ({ id, created, types: [...types].sort() })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
