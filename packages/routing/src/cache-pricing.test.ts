import { describe, expect, it } from 'vitest';
import { chargedUsage } from './cache-pricing.ts';

describe('chargedUsage', () => {
  const usage = { totalTokens: 1_100, promptTokens: 1_000, completionTokens: 100, cacheReadTokens: 800, cacheWriteTokens: 100 };

  it('charges every token 1 on a channel with no ratios', () => {
    expect(chargedUsage(usage, {})).toEqual(usage);
  });

  it('charges cache reads and writes at the channel ratios, the other tokens at 1, rounded up', () => {
    // 100 uncached prompt + 100 completion = 200; 800 × 0.1 = 80; 100 × 1.25 = 125.
    expect(chargedUsage(usage, { cache_read_ratio: 0.1, cache_write_ratio: 1.25 })).toEqual({ ...usage, totalTokens: 405 });
    expect(chargedUsage({ ...usage, cacheReadTokens: 3, cacheWriteTokens: 0, totalTokens: 10 }, { cache_read_ratio: 0.5 }).totalTokens).toBe(9);
  });

  it('leaves a usage without cached tokens as it is', () => {
    const plain = { totalTokens: 50, promptTokens: 40, completionTokens: 10 };
    expect(chargedUsage(plain, { cache_read_ratio: 0.1, cache_write_ratio: 2 })).toBe(plain);
  });
});
