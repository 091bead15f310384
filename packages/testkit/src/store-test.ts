import { test as base } from 'vitest';
import { useTestStore } from './redis-harness.ts';

/**
 * A `test` with `db`: a test Redis, a client on it and the store over that client, one for the
 * whole file, made before its first test (under the hook time-out) and closed after its last.
 */
export function storeTest() {
  const test = base.extend('db', { scope: 'file' }, async ({}, { onCleanup }) => {
    const db = await useTestStore();
    onCleanup(() => db.close());
    return db;
  });
  test.beforeAll(async ({ db }) => void db);
  return test;
}
