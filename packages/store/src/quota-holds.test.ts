import { describe, expect } from 'vitest';
import { NANOS_PER_USD, periodStart } from '@gateway/contracts';
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

  test('a budget in money admits while something of it is left after spend and holds, and a new period counts afresh', async ({ db }) => {
    const holds = new QuotaHolds(db.redis);
    const user = await db.store.users.create({ username: `h${++seq}`, password_hash: 'x' });
    // $0.001 a day: a million nano-dollars.
    const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true, max_budget: 0.001, budget_duration: 'daily' }, issueApiKey().issued);
    const subject = { tokenId: token.id, userId: user.id, keyInFlightCap: 0, userInFlightCap: 0 };
    const first = await holds.reserve(subject, 0, 60_000, 600_000) as { hold: string };
    const second = await holds.reserve(subject, 0, 60_000, 600_000) as { hold: string };
    expect(second).toHaveProperty('hold');
    // 1,000,000 less 1,200,000 held: refused until a request ends.
    expect(await holds.reserve(subject, 0, 60_000, 1)).toEqual({ reason: 'key_budget', exhausted: false, maxBudget: NANOS_PER_USD / 1000, period: 'daily' });
    await holds.settle(token.id, user.id, first.hold, { quota: 10, cost: 400_000 });
    await holds.settle(token.id, user.id, first.hold, { quota: 10, cost: 400_000 });
    await holds.settle(token.id, user.id, second.hold, { quota: 10, cost: 650_000 });
    // Spent past the budget by the last request's cost, at most its worst case: refused, spent.
    expect(await holds.check(subject)).toEqual({ reason: 'key_budget', exhausted: true, maxBudget: 1_000_000, period: 'daily' });
    const spent = (await db.store.tokens.get(token.id))!;
    expect(spent).toMatchObject({ spend: 0.00105, budget_spend: 0.00105, budget_period: periodStart('daily') });
    expect((await db.store.users.get(user.id))!.spend).toBe(0.00105);
    expect(await db.redis.exists(keys.heldCost('token', token.id), keys.heldCost('user', user.id))).toBe(0);
    // The period the spend counted ended: the next request is admitted, and its cost starts the new day's count.
    await db.redis.hset(keys.token(token.id), 'budget_period', periodStart('daily') - 86_400);
    const next = await holds.reserve(subject, 0, 60_000, 10) as { hold: string };
    expect(next).toHaveProperty('hold');
    await holds.settle(token.id, user.id, next.hold, { quota: 1, cost: 7 });
    expect(await db.redis.hmget(keys.token(token.id), 'budget_spend', 'spend', 'budget_period')).toEqual(['7', '1050007', String(periodStart('daily'))]);
  });

  test("Redis's calendar agrees with the gateway's: a week from Monday, a month from its first day (UTC)", async ({ db }) => {
    const holds = new QuotaHolds(db.redis);
    const user = await db.store.users.create({ username: `h${++seq}`, password_hash: 'x' });
    for (const period of ['daily', 'weekly', 'monthly'] as const) {
      const { token } = await db.store.tokens.create({ user_id: user.id, name: period, unlimited_quota: true, max_budget: 1, budget_duration: period }, issueApiKey().issued);
      const held = await holds.reserve({ tokenId: token.id, userId: user.id, keyInFlightCap: 0, userInFlightCap: 0 }, 0, 60_000, 5) as { hold: string };
      await holds.settle(token.id, user.id, held.hold, { quota: 1, cost: 5 });
      expect((await db.store.tokens.get(token.id))!.budget_period, period).toBe(periodStart(period));
    }
  });

  test('a hold ends with its tokens, as the earlier form did, so processes of either version read each other\'s holds during an upgrade', async ({ db }) => {
    const holds = new QuotaHolds(db.redis);
    const user = await db.store.users.create({ username: `h${++seq}`, password_hash: 'x' });
    const { token } = await db.store.tokens.create({ user_id: user.id, name: 't', remain_quota: 100, max_budget: 1 }, issueApiKey().issued);
    const subject = { tokenId: token.id, userId: user.id, keyInFlightCap: 0, userInFlightCap: 0 };
    const { hold } = await holds.reserve(subject, 30, 60_000, 500) as { hold: string };
    // The earlier scripts read a hold's tokens as its last number.
    expect(/:(\d+)$/.exec(hold)?.[1]).toBe('30');
    // A hold of the earlier form, made by a gateway not yet upgraded: its tokens, and no money.
    const earlier = 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6:20';
    await db.redis.zadd(keys.holds('token', token.id), Date.now() + 60_000, earlier);
    await db.redis.incrby(keys.heldSum('token', token.id), 20);
    expect(await db.redis.mget(keys.heldSum('token', token.id), keys.heldCost('token', token.id))).toEqual(['50', '500']);
    await holds.release(token.id, user.id, [earlier]);
    await holds.settle(token.id, user.id, hold, { quota: 10, cost: 200 });
    expect(await db.redis.exists(keys.holds('token', token.id), keys.heldSum('token', token.id), keys.heldCost('token', token.id))).toBe(0);
    expect(await db.store.tokens.get(token.id)).toMatchObject({ remain_quota: 90, spend: 2e-7 });
  });
});

