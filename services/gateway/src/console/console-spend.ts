/**
 * The console's "Spend" view, in two answers: what each key, user and model spent over the
 * current UTC day and month (from the request log, one read shared for LOG_PARTS_FRESH_MS however
 * many consoles ask), and the price table as the workers price requests with it: each priced
 * model, where its price came from (a channel's own, set, new-api's ratios, the default table),
 * and each model a channel serves at no price, which costs nothing and is listed as such.
 */
import { DEFAULT_PRICES_DATE, Role, type ModelPrice } from '@gateway/contracts';
import { RequestLogQuery, type Database, type Spend } from '@gateway/database';
import type { PriceSource, Store } from '@gateway/store';
import { logReads } from '../management/request-log-routes.ts';
import { LOG_PARTS_FRESH_MS, Shared } from './console-overview.ts';

/** The console's own reads of the log: an administrator's, of no user. */
const CONSOLE_READER = { id: -1, role: Role.root };

export interface ConsolePrice extends ModelPrice {
  model: string;
  /** Set for a channel's own price of the model. */
  channel_id?: number;
  source: PriceSource;
}

export interface ConsolePrices {
  /** The date the default table's list prices were read. */
  defaults_date: string;
  items: ConsolePrice[];
  /** Models a channel serves with no price on it: their requests cost nothing. */
  not_priced: { model: string; channel_ids: number[] }[];
  /** new-api's `GroupRatio`: each group's multiplier of every price (1 unless set). */
  group_ratios: Record<string, number>;
}

export class ConsoleSpend {
  private readonly store: Store;
  private readonly spend: Shared<Spend> | undefined;

  constructor(store: Store, database: Database | undefined) {
    this.store = store;
    this.spend = database && new Shared(() => logReads.run(CONSOLE_READER, () => new RequestLogQuery(database).spend()), LOG_PARTS_FRESH_MS);
  }

  /** Spend per key, user and model over the day and month; undefined without PostgreSQL. */
  readSpend(): Promise<Spend> | undefined {
    return this.spend?.get();
  }

  async readPrices(): Promise<ConsolePrices> {
    const [table, channels] = await Promise.all([this.store.prices.read(), this.store.channels.all()]);
    const items = table.entries().map(({ model, channel_id, price, source }) => ({ model, ...(channel_id === undefined ? {} : { channel_id }), ...price, source }));
    const unpriced = new Map<string, number[]>();
    for (const channel of channels) {
      for (const model of channel.models) {
        if (table.priceOf(model, channel.id)) continue;
        unpriced.set(model, [...(unpriced.get(model) ?? []), channel.id]);
      }
    }
    return {
      defaults_date: DEFAULT_PRICES_DATE,
      items,
      not_priced: [...unpriced].sort(([a], [b]) => a.localeCompare(b)).map(([model, ids]) => ({ model, channel_ids: ids })),
      group_ratios: { default: 1, ...table.ratios.GroupRatio },
    };
  }
}
