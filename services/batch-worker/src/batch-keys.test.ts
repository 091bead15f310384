import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestStore, type TestStore } from '@gateway/testkit';
import { issueApiKey, type Store } from '@gateway/store';
import { BatchKeys } from './batch-keys.ts';

let db: TestStore;
let store: Store;
beforeAll(async () => {
  db = await useTestStore();
  ({ store } = db);
});
afterAll(async () => {
  await db.close();
});

const keyOf = async (fields: Record<string, unknown> = {}) => {
  const user = await store.users.create({ username: `batcher${Math.random().toString(36).slice(2, 8)}`, password_hash: 'x' });
  const { token } = await store.tokens.create({ user_id: user.id, name: 'b', ...fields }, issueApiKey().issued);
  return token.id;
};

describe('a batch\'s key', () => {
  it('serves its lines while it is enabled, and not once its expired_time has passed, with nothing changed at that moment', async () => {
    const keys = new BatchKeys(store);
    const never = await keyOf();
    expect((await keys.holderOf({ token_id: never })).tokenId).toBe(never);
    // Two seconds ahead: a loaded machine may take one between the key's making and its first use.
    const expiry = Math.floor(Date.now() / 1000) + 2;
    const soon = await keyOf({ expired_time: expiry });
    expect((await keys.holderOf({ token_id: soon })).tokenId).toBe(soon);
    // Past its expiry (a fixed wait on purpose: the second boundary itself): refused from the key
    // read a moment ago too, with no change announced.
    await new Promise((r) => setTimeout(r, Math.max(0, (expiry + 1) * 1000 - Date.now()) + 50));
    await expect(keys.holderOf({ token_id: soon })).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/expired/) });
    expect((await keys.holderOf({ token_id: never })).tokenId).toBe(never);
  });

  it('is read again within a second, or at once when told a key changed', async () => {
    const keys = new BatchKeys(store);
    const id = await keyOf();
    await keys.holderOf({ token_id: id });
    await store.tokens.update(id, { status: 2 });
    // Read a moment ago: still served until the second is out, or until forgotten.
    expect((await keys.holderOf({ token_id: id })).tokenId).toBe(id);
    keys.forget();
    await expect(keys.holderOf({ token_id: id })).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/disabled/) });
    await expect(keys.holderOf({ token_id: 987_654 })).rejects.toMatchObject({ status: 401, message: expect.stringMatching(/no longer exists/) });
  });
});
