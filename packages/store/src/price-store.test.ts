import { describe, expect } from 'vitest';
import { storeTest } from '@gateway/testkit/fixtures';
import { PriceStore } from './price-store.ts';

const test = storeTest();
let seq = 0;

describe('prices in the store', () => {
  test("a channel's own price of a model whose name holds '@' (Vertex's) is that model's, on that channel only", async ({ db }) => {
    const prices = new PriceStore(db.redis);
    const model = `claude-sonnet-4-5@20250929-${++seq}`;
    await prices.setPrice(model, { input: 3, output: 15 });
    await prices.setPrice(model, { input: 1, output: 20 }, 7);
    const table = await prices.read();
    expect(table.priceOf(model, 7)).toEqual({ price: { input: 1, output: 20 }, source: 'channel' });
    expect(table.priceOf(model, 8)).toEqual({ price: { input: 3, output: 15 }, source: 'set' });
    // A hold is at each rate's dearest over the model's channels.
    expect(table.dearestOf(model)).toEqual({ input: 3, output: 20, cached_input: 3, cache_write: 3 });
    expect(table.entries().filter((e) => e.model === model).map((e) => e.channel_id)).toEqual([undefined, 7]);
    expect(await prices.deletePrice(model, 7)).toBe(true);
    expect((await prices.read()).priceOf(model, 7)?.source).toBe('set');
  });

  test('a ModelRatio written back unchanged keeps the prices set; one that changes a model replaces its price', async ({ db }) => {
    const prices = new PriceStore(db.redis);
    const [kept, changed] = [`kept-${++seq}`, `changed-${seq}`];
    await prices.setPrice(kept, { input: 4, output: 12, cached_input: 1 });
    await prices.setPrice(changed, { input: 4, output: 12 });
    await prices.setRatios('ModelRatio', { [kept]: 2, [changed]: 3 });
    const table = await prices.read();
    expect(table.priceOf(kept)).toEqual({ price: { input: 4, output: 12, cached_input: 1 }, source: 'set' });
    expect(table.priceOf(changed)).toEqual({ price: { input: 6, output: 6 }, source: 'ratio' });
    // A group's ratio, and none for what every object inherits.
    await prices.setRatios('GroupRatio', { vip: 0.5 });
    const grouped = await prices.read();
    expect([grouped.groupRatio('vip'), grouped.groupRatio('constructor'), grouped.groupRatio(undefined)]).toEqual([0.5, 1, 1]);
  });
});
