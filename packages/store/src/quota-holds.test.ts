import { describe, expect } from 'vitest';
import { storeTest } from '@gateway/testkit/fixtures';
import { issueApiKey } from './secrets.ts';
import { keys } from './keys.ts';
import { QuotaHolds } from './quota-holds.ts';

const test = storeTest();
let seq = 0;

describe('quota holds', () => {
  test('admit while the quota less what is held is above zero, and free the in-flight slot and the quota when settled', async ({ db }) => {
    const holds = new QuotaHolds(db.redis);
    const user = await db.store.users.create({ username: `h${++seq}`, password_hash: 'x' });
    const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', remain_quota: 50 }, issueApiKey().issued);
    const subject = { tokenId: token.id, userId: user.id, keyInFlightCap: 0, userInFlightCap: 2 };
    const first = await holds.reserve(subject, 30, 60_000);
    const second = await holds.reserve(subject, 30, 60_000);
    expect(first).toHaveProperty('hold');
    expect(second).toHaveProperty('hold');
    // 50 less 60 held: nothing left to hold, and the user's two slots are taken anyway.
    expect(await holds.reserve(subject, 1, 60_000)).toEqual({ reason: 'user_in_flight', cap: 2 });
    expect(await holds.check({ ...subject, userInFlightCap: 0 })).toEqual({ reason: 'key_quota', exhausted: false });
    await holds.settle(token.id, user.id, (first as { hold: string }).hold, { quota: 12 });
    // Settled twice (a job run again): charged once.
    await holds.settle(token.id, user.id, (first as { hold: string }).hold, { quota: 12 });
    expect((await db.store.tokens.get(token.id))!.remain_quota).toBe(38);
    expect((await db.store.users.get(user.id))!.used_quota).toBe(12);
    expect(await holds.check(subject)).toBeUndefined();
    // A request that never ran gives its hold back uncharged; nothing is left behind.
    await holds.release(token.id, user.id, [(second as { hold: string }).hold]);
    expect(await db.redis.exists(keys.holds('token', token.id), keys.heldSum('token', token.id), keys.holds('user', user.id), keys.heldSum('user', user.id))).toBe(0);
    expect((await db.store.tokens.get(token.id))!.remain_quota).toBe(38);
  });

  test('a hold whose request never settled runs out at its expiry', async ({ db }) => {
    const holds = new QuotaHolds(db.redis);
    const user = await db.store.users.create({ username: `h${++seq}`, password_hash: 'x', quota: 10 });
    const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true }, issueApiKey().issued);
    const subject = { tokenId: token.id, userId: user.id, keyInFlightCap: 1, userInFlightCap: 0 };
    expect(await holds.reserve(subject, 10, 200)).toHaveProperty('hold');
    expect(await holds.check(subject)).toEqual({ reason: 'key_in_flight', cap: 1 });
    await expect.poll(() => holds.check(subject), { timeout: 3000 }).toBeUndefined();
    expect(await db.redis.get(keys.heldSum('user', user.id))).toBe('0');
  });
});
