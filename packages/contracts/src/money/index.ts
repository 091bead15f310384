export * from './prices.ts';
export * from './budget-period.ts';
export { defaultPrices, DEFAULT_PRICES_DATE } from './default-prices.ts';
