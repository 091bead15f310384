/**
 * What a model costs, and what a request of it cost. Prices are US dollars per million tokens,
 * as every provider publishes them; a cost is kept in whole nano-dollars (1e-9 USD), so that sums
 * in Redis and PostgreSQL are exact integers and a request of a few tokens of a cheap model still
 * costs something (10 tokens at $0.02 per million: 200 nano-dollars).
 */
import { z } from 'zod';
import { ownValue } from '../own-value.ts';
import { MAX_REQUEST_TOKENS, tokenCount } from '../worst-case-usage.ts';

/** USD per million tokens: never negative, at most $1,000,000 per million tokens. */
const perMillion = z.number().min(0).max(1_000_000);

/**
 * A model's price. `cached_input` (a prompt token read from the provider's prompt cache) and
 * `cache_write` (one written to it) default to `input`: a model priced without them charges a
 * cached token as any other.
 */
export const modelPrice = z.strictObject({
  input: perMillion,
  output: perMillion,
  cached_input: perMillion.optional(),
  cache_write: perMillion.optional(),
});
export type ModelPrice = z.infer<typeof modelPrice>;

/** Nano-dollars in one dollar. */
export const NANOS_PER_USD = 1_000_000_000;

/** A token count's cost at a price per million tokens, in nano-dollars (1 USD/M is 1,000 nano a token). */
const nanosOf = (tokens: number, usdPerMillion: number) => tokens * usdPerMillion * 1000;

/** The usage a cost is computed from, as the request log has it (prompt tokens include cached ones). */
export interface PricedUsage {
  totalTokens: number;
  promptTokens?: number;
  completionTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/**
 * What `usage` cost at `price`, times the caller's group ratio, in whole nano-dollars (rounded
 * up). Where the upstream reported no split (an estimate), every token not known to be output is
 * taken as input; where it reported a prompt count but no output count, the rest of its total is
 * output.
 */
export function costOf(usage: PricedUsage, price: ModelPrice, groupRatio = 1): number {
  // An upstream's counts as the quota takes them: whole, never negative, never past MAX_REQUEST_TOKENS.
  const output = tokenCount(usage.completionTokens ?? 0);
  const prompt = usage.promptTokens === undefined ? Math.max(0, tokenCount(usage.totalTokens) - output) : tokenCount(usage.promptTokens);
  const read = tokenCount(usage.cacheReadTokens ?? 0);
  const written = tokenCount(usage.cacheWriteTokens ?? 0);
  const uncached = Math.max(0, prompt - read - written);
  // Tokens the total counts and the split does not (an upstream that reported no output count) are output.
  const unsplit = Math.max(0, tokenCount(usage.totalTokens) - prompt - output);
  const nanos = nanosOf(uncached, price.input)
    + nanosOf(read, price.cached_input ?? price.input)
    + nanosOf(written, price.cache_write ?? price.input)
    + nanosOf(output + unsplit, price.output);
  return nanosBounded(nanos * groupRatio);
}

/**
 * Whole nano-dollars, rounded up, at most Number.MAX_SAFE_INTEGER ($9 million): an integer Redis
 * adds exactly, whatever counts an upstream reports. What is no number is the most (a hold).
 */
export const nanosBounded = (nanos: number) => (Number.isFinite(nanos) ? Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.ceil(nanos))) : Number.MAX_SAFE_INTEGER);

/** A cost to charge, as `nanosBounded`, but none when there is no number (a charge never guesses up). */
export const chargedNanos = (cost: number | undefined) => (cost !== undefined && Number.isFinite(cost) ? nanosBounded(cost) : 0);

/**
 * The most `tokens` tokens of a request may cost at `price`: each at the dearest of the model's
 * rates, so a hold is never below what the request can spend, however its tokens split.
 */
export function worstCaseCostOf(tokens: number, price: ModelPrice, groupRatio = 1): number {
  const dearest = Math.max(price.input, price.output, price.cached_input ?? 0, price.cache_write ?? 0);
  // A worst case some field made no number holds the most, never nothing (as a quota hold does).
  const held = Number.isFinite(tokens) ? tokenCount(tokens) : MAX_REQUEST_TOKENS;
  return nanosBounded(nanosOf(held, dearest) * groupRatio);
}

/** Nano-dollars as dollars, for replies and the console (the log keeps the integer). */
export const usdOf = (nanos: number) => nanos / NANOS_PER_USD;

/** Dollars as whole nano-dollars (rounded to the nearest). */
export const nanosOfUsd = (usd: number) => Math.round(usd * NANOS_PER_USD);

/**
 * new-api's ratio options as prices. new-api bills `(prompt + completion × CompletionRatio) ×
 * ModelRatio × GroupRatio` quota units, 500,000 units a dollar: a ModelRatio of 1 is $2 per
 * million input tokens, and CompletionRatio is output's price over input's. `CacheRatio` (a
 * cache read over input) and `CreateCacheRatio` (a cache write over input) the same.
 */
export const USD_PER_MILLION_PER_MODEL_RATIO = 2;

export interface NewApiRatios {
  ModelRatio: Record<string, number>;
  CompletionRatio: Record<string, number>;
  CacheRatio: Record<string, number>;
  CreateCacheRatio: Record<string, number>;
}

/** The price new-api's ratios give a model, or undefined when its ModelRatio is unset. */
export function priceOfRatios(model: string, ratios: Partial<NewApiRatios>): ModelPrice | undefined {
  // A model is a name a client chose: only a table's own entries ("constructor" is none).
  const ratioOf = (table: Record<string, number> | undefined) => (table ? ownValue(table, model) : undefined);
  const ratio = ratioOf(ratios.ModelRatio);
  if (ratio === undefined) return undefined;
  const input = ratio * USD_PER_MILLION_PER_MODEL_RATIO;
  const cache = ratioOf(ratios.CacheRatio);
  const createCache = ratioOf(ratios.CreateCacheRatio);
  return {
    input,
    output: input * (ratioOf(ratios.CompletionRatio) ?? 1),
    ...(cache === undefined ? {} : { cached_input: input * cache }),
    ...(createCache === undefined ? {} : { cache_write: input * createCache }),
  };
}

/** A price as new-api's ratios (for `GET /api/option/`): the inverse of `priceOfRatios`. */
export function ratiosOfPrice(price: ModelPrice): { model: number; completion: number; cache?: number; createCache?: number } {
  const model = price.input / USD_PER_MILLION_PER_MODEL_RATIO;
  const of = (value: number) => (price.input === 0 ? 1 : value / price.input);
  return {
    model,
    completion: of(price.output),
    ...(price.cached_input === undefined ? {} : { cache: of(price.cached_input) }),
    ...(price.cache_write === undefined ? {} : { createCache: of(price.cache_write) }),
  };
}
