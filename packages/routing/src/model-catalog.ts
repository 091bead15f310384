/**
 * Which models a caller may list: the pure part of the model lists (`GET /v1/models`,
 * `GET /v1beta/models`), with the same rules routing uses, so a listed model is one a request
 * can reach and an unlisted one is not.
 */
import { ChannelStatus, type Channel, type ChannelType } from '@gateway/contracts';
import { servesGroup, upstreamModelFor } from './choose-channel.ts';

export interface CatalogQuery {
  /** The wire format: only channels of this type serve it. */
  type: ChannelType;
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
}

/** Every model an enabled channel of the type serves for the group, sorted by name. */
export function servedModels(channels: readonly Channel[], query: CatalogQuery): ServedModel[] {
  const served = new Map<string, number>();
  for (const channel of channels) {
    if (channel.status !== ChannelStatus.enabled || channel.type !== query.type || !servesGroup(channel, query.group)) continue;
    for (const name of new Set([...channel.models, ...Object.keys(channel.model_mapping ?? {})])) {
      if (upstreamModelFor(channel, name) === undefined) continue;
      if (query.allowed.length > 0 && !query.allowed.includes(name)) continue;
      served.set(name, Math.min(served.get(name) ?? Infinity, channel.created_time));
    }
  }
  return [...served].map(([id, created]) => ({ id, created })).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
