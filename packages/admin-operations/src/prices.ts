import { listPricesQuery, NANOS_PER_USD, notFound, priceQuery, ratiosOfPrice, setOptionBody, setPriceBody, Role } from '@gateway/contracts';
import { ratioOptions, type PriceTable, type Store } from '@gateway/store';
import { get, operation, put, type AdminRoute } from './operation.ts';

/** What prices answer with: each model's price, where it came from, and what a million tokens of each kind cost. */
async function priceList(store: Store, model?: string) {
  const table = await store.prices.read();
  return table.entries().filter((entry) => model === undefined || entry.model === model);
}

/**
 * new-api's options as it lists them, `[{ key, value }]`, the ratio options only: each a JSON
 * object, ModelRatio and the ratios beside it for every priced model (so that a console which
 * reads the map, edits it and writes it back keeps every model's price).
 */
function optionList(table: PriceTable) {
  // Built as entries: a model is a name an administrator chose ("__proto__" is one like any other).
  const maps: Record<string, [string, number][]> = { ModelRatio: [], CompletionRatio: [], CacheRatio: [], CreateCacheRatio: [] };
  for (const entry of table.entries()) {
    // A channel's own price is no ratio; nor a price whose input is free and output is not (no
    // ModelRatio and CompletionRatio say that: read and written back, it would be free).
    if (entry.channel_id !== undefined || (entry.price.input === 0 && entry.price.output > 0)) continue;
    const ratios = ratiosOfPrice(entry.price);
    maps.ModelRatio!.push([entry.model, ratios.model]);
    maps.CompletionRatio!.push([entry.model, ratios.completion]);
    if (ratios.cache !== undefined) maps.CacheRatio!.push([entry.model, ratios.cache]);
    if (ratios.createCache !== undefined) maps.CreateCacheRatio!.push([entry.model, ratios.createCache]);
  }
  maps.GroupRatio = [['default', 1], ...Object.entries(table.ratios.GroupRatio)];
  return ratioOptions.map((key) => ({ key, value: JSON.stringify(Object.fromEntries(maps[key]!)) }));
}

const removeByQuery = (path: string): AdminRoute => ({ method: 'DELETE', path, from: 'query' });

export const priceOperations = {
  /** Every priced model (the default table's, the ratios', those set, each channel's own). */
  'price.list': operation({
    route: get('/price/', 'query'), input: listPricesQuery, minRole: Role.admin,
    apply: async ({ store, input }) => ({ items: await priceList(store, input.model), nanos_per_usd: NANOS_PER_USD }),
  }),

  'price.set': operation({
    route: put('/price/'), input: setPriceBody, minRole: Role.admin,
    apply: async ({ store, input: { model, channel_id: channelId, ...price } }) => {
      if (channelId !== undefined && !(await store.channels.get(channelId))) throw notFound(`no channel with id ${channelId}`);
      await store.prices.setPrice(model, price, channelId);
      return priceList(store, model);
    },
  }),

  /** The model falls back to its ratios or the default table (a channel's own price to the model's). */
  'price.delete': operation({
    route: removeByQuery('/price/'), input: priceQuery, minRole: Role.admin,
    apply: async ({ store, input }) => {
      if (!(await store.prices.deletePrice(input.model, input.channel_id))) throw notFound(`no price was set for ${input.model}${input.channel_id ? ` on channel ${input.channel_id}` : ''}`);
      return priceList(store, input.model);
    },
  }),

  /** new-api's options, the ratio options only (new-api: root). */
  'option.list': operation({
    route: get('/option/', 'none'), input: listPricesQuery, minRole: Role.root,
    apply: async ({ store }) => optionList(await store.prices.read()),
  }),

  'option.set': operation({
    route: put('/option/'), input: setOptionBody, minRole: Role.root,
    apply: async ({ store, input }) => {
      await store.prices.setRatios(input.key, input.value);
      return null;
    },
  }),
};
