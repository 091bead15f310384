/**
 * The test kit's vitest fixtures (`test.extend`), apart from the rest of the kit because only a
 * vitest run may build them (the benchmarks and the demo import the kit too).
 */
export { loggedRow, stackTest, type StackTestOptions, type Upstreams, type MakeChannel, type MakeApiKey } from './stack-test.ts';
export { storeTest } from './store-test.ts';
