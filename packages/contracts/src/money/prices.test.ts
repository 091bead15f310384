import { describe, expect, it } from 'vitest';
import { periodEnd, periodStart } from './budget-period.ts';
import { costOf, priceOfRatios, ratiosOfPrice, worstCaseCostOf } from './prices.ts';

describe('prices', () => {
  const price = { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 };

  it('costs each kind of token at its rate, in whole nano-dollars rounded up', () => {
    // 1,000 prompt tokens of which 600 read from the cache and 100 written to it, 200 output.
    const usage = { totalTokens: 1200, promptTokens: 1000, completionTokens: 200, cacheReadTokens: 600, cacheWriteTokens: 100 };
    expect(costOf(usage, price)).toBe(300 * 3000 + 600 * 300 + 100 * 3750 + 200 * 15_000);
    expect(costOf(usage, price, 0.5)).toBe((300 * 3000 + 600 * 300 + 100 * 3750 + 200 * 15_000) / 2);
    // A cheap model's few tokens still cost something.
    expect(costOf({ totalTokens: 1, promptTokens: 1, completionTokens: 0 }, { input: 0.0001, output: 0 })).toBe(1);
    // No split reported: every token not known to be output is input.
    expect(costOf({ totalTokens: 10 }, price)).toBe(10 * 3000);
    // A prompt count and a total, no output count: the rest is output.
    expect(costOf({ totalTokens: 10, promptTokens: 4 }, price)).toBe(4 * 3000 + 6 * 15_000);
  });

  it('holds a worst case at the dearest rate, never below what the request can cost', () => {
    expect(worstCaseCostOf(1000, price)).toBe(1000 * 15_000);
    expect(worstCaseCostOf(1000, price)).toBeGreaterThanOrEqual(costOf({ totalTokens: 1000, promptTokens: 0, completionTokens: 1000 }, price));
  });

  it("reads new-api's ratios as new-api bills them: ModelRatio 1 is $2 per million input tokens", () => {
    expect(priceOfRatios('m', { ModelRatio: { m: 1.25 }, CompletionRatio: { m: 4 }, CacheRatio: { m: 0.1 } })).toEqual({ input: 2.5, output: 10, cached_input: 0.25 });
    expect(priceOfRatios('other', { ModelRatio: { m: 1 } })).toBeUndefined();
    // A model named as what every object inherits has no ratio.
    for (const name of ['constructor', 'toString', '__proto__']) expect(priceOfRatios(name, JSON.parse('{"ModelRatio":{"m":1},"CompletionRatio":{}}'))).toBeUndefined();
    expect(ratiosOfPrice({ input: 2.5, output: 10, cached_input: 0.25 })).toEqual({ model: 1.25, completion: 4, cache: 0.1 });
  });
});

describe('budget periods (UTC)', () => {
  // Wednesday 2026-12-30, 23:59:59.
  const now = Date.UTC(2026, 11, 30, 23, 59, 59);
  it('start on the day, the Monday and the first of the month, and end at the next', () => {
    expect(periodStart('daily', now)).toBe(Date.UTC(2026, 11, 30) / 1000);
    expect(periodStart('weekly', now)).toBe(Date.UTC(2026, 11, 28) / 1000);
    expect(periodStart('monthly', now)).toBe(Date.UTC(2026, 11, 1) / 1000);
    expect(periodEnd('monthly', now)).toBe(Date.UTC(2027, 0, 1) / 1000);
    expect(periodEnd('weekly', now)).toBe(Date.UTC(2027, 0, 4) / 1000);
    expect(periodStart('none', now)).toBe(0);
    expect(periodEnd('none', now)).toBeUndefined();
    // A Monday is its own week's start.
    expect(periodStart('weekly', Date.UTC(2026, 10, 30, 12))).toBe(Date.UTC(2026, 10, 30) / 1000);
  });
});

describe('a cost Redis can add', () => {
  it('is a safe integer whatever counts an upstream reports', () => {
    const price = { input: 1_000_000, output: 1_000_000 };
    expect(costOf({ totalTokens: 1e30, promptTokens: 1e30, completionTokens: 1e30 }, price)).toBe(Number.MAX_SAFE_INTEGER);
    expect(costOf({ totalTokens: -5, promptTokens: -5, completionTokens: Number.NaN }, price)).toBe(0);
    expect(worstCaseCostOf(Number.POSITIVE_INFINITY, price)).toBe(Number.MAX_SAFE_INTEGER);
    expect(worstCaseCostOf(Number.NaN, { input: 0.01, output: 0.01 })).toBeGreaterThan(0);
  });
});
