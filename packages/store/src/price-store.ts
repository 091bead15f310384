/**
 * Prices, as administrators set them (`PUT /api/price/`, new-api's ratio options), and the price
 * table every gateway and worker reads them through (`PriceBook`). A model's price, for a request
 * served by a channel, is the first of:
 * 1. the channel's own price for the model;
 * 2. the price an administrator set for the model;
 * 3. new-api's ratios for it (`ModelRatio` and the ratios beside it);
 * 4. the default table (`defaultPrices`);
 * and otherwise none: the request costs nothing, and its log row says it was not priced.
 * A user's group multiplies every price by its `GroupRatio` (1 unless set).
 */
import type { RedisClient as Redis } from '@gateway/config';
import { defaultPrices, modelPrice, ownValue, priceOfRatios, USD_PER_MILLION_PER_MODEL_RATIO, type ModelPrice, type NewApiRatios } from '@gateway/contracts';
import { publishChange, touchesPrices } from './change-messages.ts';
import type { InvalidationFeed } from './invalidation-feed.ts';
import { keys } from './keys.ts';

/** new-api's options this gateway takes (`PUT /api/option/`), each a JSON object of numbers. */
export const ratioOptions = ['ModelRatio', 'CompletionRatio', 'CacheRatio', 'CreateCacheRatio', 'GroupRatio'] as const;
export type RatioOption = (typeof ratioOptions)[number];

/** Where a model's price came from. */
export type PriceSource = 'channel' | 'set' | 'ratio' | 'default';

export interface PriceEntry {
  model: string;
  /** Set for a channel's own price of the model. */
  channel_id?: number;
  price: ModelPrice;
  source: PriceSource;
}

/** A channel's own price's field: its id first, so that any model name (Vertex's `claude-…@2024…`) follows whole. */
const channelField = (model: string, channelId: number) => `${channelId}:${model}`;

function parseChannelField(name: string): { model: string; channelId: number } | undefined {
  const colon = name.indexOf(':');
  const channelId = Number(name.slice(0, colon));
  return colon > 0 && Number.isSafeInteger(channelId) ? { model: name.slice(colon + 1), channelId } : undefined;
}

function parsePrice(json: string): ModelPrice | undefined {
  try {
    const parsed = modelPrice.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function parseRatios(json: string | undefined): Record<string, number> {
  if (!json) return {};
  try {
    const value = JSON.parse(json) as unknown;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, number] => typeof entry[1] === 'number' && Number.isFinite(entry[1]) && entry[1] >= 0));
  } catch {
    return {};
  }
}

/** The prices as one read of the store saw them: answers every lookup without Redis. */
export class PriceTable {
  /** Prices an administrator set for a model. */
  private readonly set: Map<string, ModelPrice>;
  /** Channels' own prices: model → channel id → price, indexed once, when the table is read. */
  private readonly byChannel = new Map<string, Map<number, ModelPrice>>();
  readonly ratios: Record<RatioOption, Record<string, number>>;

  /** `channelSet`: the channels' own prices as stored, by `<channel id>:<model>`. */
  constructor(set: Map<string, ModelPrice>, channelSet: Map<string, ModelPrice>, ratios: Record<RatioOption, Record<string, number>>) {
    this.set = set;
    this.ratios = ratios;
    for (const [name, price] of channelSet) {
      const own = parseChannelField(name);
      if (!own) continue;
      const channels = this.byChannel.get(own.model) ?? new Map<number, ModelPrice>();
      channels.set(own.channelId, price);
      this.byChannel.set(own.model, channels);
    }
  }

  static empty(): PriceTable {
    return new PriceTable(new Map(), new Map(), Object.fromEntries(ratioOptions.map((name) => [name, {}])) as Record<RatioOption, Record<string, number>>);
  }

  /** The price of `model` served by channel `channelId` (see the order above); undefined: not priced. */
  priceOf(model: string, channelId?: number): { price: ModelPrice; source: PriceSource } | undefined {
    if (channelId !== undefined) {
      const own = this.byChannel.get(model)?.get(channelId);
      if (own) return { price: own, source: 'channel' };
    }
    return this.modelPrice(model);
  }

  /**
   * The dearest price `model` may be served at, on any channel: what a request's hold on a
   * budget is priced at before its channel is chosen.
   */
  dearestOf(model: string): ModelPrice | undefined {
    let dearest = this.modelPrice(model)?.price;
    for (const price of this.byChannel.get(model)?.values() ?? []) dearest = dearest ? dearer(dearest, price) : price;
    return dearest;
  }

  /** The multiplier of a user's group (new-api's `GroupRatio`): 1 unless set. */
  groupRatio(group: string | undefined): number {
    return ownValue(this.ratios.GroupRatio, group || 'default') ?? 1;
  }

  /** Every priced model: the defaults, the ratios', the administrators' and the channels' own. */
  entries(): PriceEntry[] {
    const models = new Set([...Object.keys(defaultPrices), ...Object.keys(this.ratios.ModelRatio)]);
    const entries: PriceEntry[] = [];
    for (const model of this.set.keys()) models.add(model);
    for (const [model, channels] of this.byChannel) {
      for (const [channelId, price] of channels) entries.push({ model, channel_id: channelId, price, source: 'channel' });
    }
    for (const model of models) {
      const priced = this.modelPrice(model);
      if (priced) entries.push({ model, ...priced });
    }
    return entries.sort((a, b) => a.model.localeCompare(b.model) || (a.channel_id ?? 0) - (b.channel_id ?? 0));
  }

  private modelPrice(model: string): { price: ModelPrice; source: PriceSource } | undefined {
    const set = this.set.get(model);
    if (set) return { price: set, source: 'set' };
    const ratio = priceOfRatios(model, this.ratios as Partial<NewApiRatios>);
    if (ratio) return { price: ratio, source: 'ratio' };
    const fallback = ownValue(defaultPrices, model);
    return fallback && { price: fallback, source: 'default' };
  }
}

/** Each rate the higher of two prices'. */
function dearer(a: ModelPrice, b: ModelPrice): ModelPrice {
  return {
    input: Math.max(a.input, b.input),
    output: Math.max(a.output, b.output),
    cached_input: Math.max(a.cached_input ?? a.input, b.cached_input ?? b.input),
    cache_write: Math.max(a.cache_write ?? a.input, b.cache_write ?? b.input),
  };
}

/** Reads and writes of the prices in Redis; every write announces `prices` on the change feed. */
export class PriceStore {
  private readonly redis: Redis;

  constructor(redis: Redis) {
    this.redis = redis;
  }

  async read(): Promise<PriceTable> {
    const [set, channelSet, options] = await Promise.all([this.redis.hgetall(keys.prices), this.redis.hgetall(keys.channelPrices), this.redis.hgetall(keys.priceOptions)]);
    const pricesOf = (hash: Record<string, string>) => {
      const prices = new Map<string, ModelPrice>();
      for (const [name, json] of Object.entries(hash)) {
        const price = parsePrice(json);
        if (price) prices.set(name, price);
      }
      return prices;
    };
    const ratios = Object.fromEntries(ratioOptions.map((name) => [name, parseRatios(options[name])])) as Record<RatioOption, Record<string, number>>;
    return new PriceTable(pricesOf(set), pricesOf(channelSet), ratios);
  }

  /** Sets the price of `model` (on channel `channelId` alone, when given). */
  async setPrice(model: string, price: ModelPrice, channelId?: number): Promise<void> {
    if (channelId === undefined) await this.redis.hset(keys.prices, model, JSON.stringify(price));
    else await this.redis.hset(keys.channelPrices, channelField(model, channelId), JSON.stringify(price));
    await publishChange(this.redis, { kind: 'prices' });
  }

  /** Removes a price an administrator set; the model falls back to its ratios or the default table. Whether there was one. */
  async deletePrice(model: string, channelId?: number): Promise<boolean> {
    const removed = channelId === undefined ? await this.redis.hdel(keys.prices, model) : await this.redis.hdel(keys.channelPrices, channelField(model, channelId));
    await publishChange(this.redis, { kind: 'prices' });
    return removed > 0;
  }

  /**
   * Sets one of new-api's ratio options, whole, as new-api does. A `ModelRatio` written after a
   * model's price was set is the later word where it says something else: a model it gives
   * another input price loses the price set for it (its channels' own prices stay); one it gives
   * the same (a console that read the map and wrote it back) keeps it.
   */
  async setRatios(option: RatioOption, ratios: Record<string, number>): Promise<void> {
    const multi = this.redis.multi().hset(keys.priceOptions, option, JSON.stringify(ratios));
    if (option === 'ModelRatio') {
      const set = await this.redis.hgetall(keys.prices);
      const changed = Object.entries(ratios)
        .filter(([model, ratio]) => Object.hasOwn(set, model) && parsePrice(set[model]!)?.input !== ratio * USD_PER_MILLION_PER_MODEL_RATIO)
        .map(([model]) => model);
      if (changed.length > 0) multi.hdel(keys.prices, ...changed);
    }
    await multi.exec();
    await publishChange(this.redis, { kind: 'prices' });
  }
}

/**
 * One process's copy of the price table, read at start and again whenever the change feed says
 * prices changed (and at least every `refreshMs`, should an announcement be lost), so that
 * pricing a request costs no Redis call.
 */
export class PriceBook {
  private table = PriceTable.empty();
  private readonly store: PriceStore;
  private readonly refreshMs: number;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private stale = false;

  constructor(redis: Redis, options: { feed?: InvalidationFeed; refreshMs?: number } = {}) {
    this.store = new PriceStore(redis);
    this.refreshMs = options.refreshMs ?? 30_000;
    options.feed?.on((change) => {
      if (touchesPrices(change)) void this.refresh();
    });
  }

  /** Reads the table, and keeps it fresh until `close`. */
  async start(): Promise<this> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
    return this;
  }

  /** The table as last read. */
  get current(): PriceTable {
    return this.table;
  }

  /** Reads the table again (one read at a time; a change heard during a read reads once more after it). */
  refresh(): Promise<void> {
    if (this.reading) {
      this.stale = true;
      return this.reading;
    }
    this.reading = this.store.read().then(
      (table) => { this.table = table; },
      () => { /* Redis away: the table last read stays, and the next refresh tries again. */ },
    ).finally(() => {
      this.reading = undefined;
      if (this.stale) {
        this.stale = false;
        void this.refresh();
      }
    });
    return this.reading;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
