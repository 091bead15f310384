/**
 * What a request's usage costs on the channel that served it: a prompt token read from the
 * provider's prompt cache counts the channel's `cache_read_ratio`, one written to it its
 * `cache_write_ratio`, every other token 1 (quota units are tokens). Unset ratios are 1, so a
 * channel an administrator did not price charges cached tokens as any other.
 */
import type { Channel } from '@gateway/contracts';
import type { Usage } from './usage-ledger.ts';

export function chargedUsage(usage: Usage, channel: Pick<Channel, 'cache_read_ratio' | 'cache_write_ratio'>): Usage {
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const readRatio = channel.cache_read_ratio ?? 1;
  const writeRatio = channel.cache_write_ratio ?? 1;
  if ((read === 0 || readRatio === 1) && (written === 0 || writeRatio === 1)) return usage;
  // Every door counts cache reads and writes inside its total (its prompt holds them).
  const uncached = Math.max(0, usage.totalTokens - read - written);
  return { ...usage, totalTokens: uncached + Math.ceil(read * readRatio + written * writeRatio) };
}
