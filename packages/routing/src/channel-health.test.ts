import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { InvalidationFeed, type Store } from '@gateway/store';
import { useTestStore, type TestRedis, type TestStore } from '@gateway/testkit';
import { ChannelHealth } from './channel-health.ts';

let db: TestStore;
let server: TestRedis;
let redis: Redis;
let store: Store;
const options = { failuresBeforeCooldown: 3, cooldownMs: 60_000, authFailuresBeforeDisable: 2 };

beforeAll(async () => {
  db = await useTestStore();
  ({ server, redis, store } = db);
});
afterAll(async () => {
  await db.close();
});

const newChannel = () => store.channels.create({ name: 'c', type: 'openai', key: 'sk-k', base_url: 'http://u', models: ['m'] });
const transient = { auth: false, reason: 'upstream answered 500' };
const auth = { auth: true, reason: 'auto-disabled: upstream answered 401' };

describe('channel health', () => {
  it('cools a channel down only after the configured number of consecutive failures', async () => {
    const health = new ChannelHealth(redis, options);
    const channel = await newChannel();
    expect(await health.recordFailure(channel.id, transient)).toBe('none');
    expect(await health.recordFailure(channel.id, transient)).toBe('none');
    expect(health.isCoolingDown(channel.id)).toBe(false);
    expect(await health.recordFailure(channel.id, transient)).toBe('cooldown');
    expect(health.isCoolingDown(channel.id)).toBe(true);
    expect((await store.channels.get(channel.id))!.status).toBe(1);
  });

  it('resets the count on success, so failures must be consecutive', async () => {
    const health = new ChannelHealth(redis, options);
    const channel = await newChannel();
    await health.recordFailure(channel.id, transient);
    await health.recordFailure(channel.id, transient);
    await health.recordSuccess(channel.id);
    expect(await health.recordFailure(channel.id, transient)).toBe('none');
    expect(health.isCoolingDown(channel.id)).toBe(false);
  });

  it('auto-disables after consecutive 401/403 with the reason, never on one', async () => {
    const health = new ChannelHealth(redis, { ...options, failuresBeforeCooldown: 10 });
    const channel = await newChannel();
    expect(await health.recordFailure(channel.id, auth)).toBe('none');
    expect((await store.channels.get(channel.id))!.status).toBe(1);
    // Another kind of failure in between breaks the run.
    await health.recordFailure(channel.id, transient);
    expect(await health.recordFailure(channel.id, auth)).toBe('none');
    expect(await health.recordFailure(channel.id, auth)).toBe('disabled');
    const stored = (await store.channels.get(channel.id))!;
    expect(stored.status).toBe(3);
    expect(stored.status_reason).toContain('401');
  });

  it('leaves a manually disabled channel as it is', async () => {
    const health = new ChannelHealth(redis, options);
    const channel = await newChannel();
    await store.channels.update(channel.id, { status: 2 });
    await health.recordFailure(channel.id, auth);
    await health.recordFailure(channel.id, auth);
    expect((await store.channels.get(channel.id))!.status).toBe(2);
  });

  it("cools a channel for everyone only on failures from two users or more; one user's alone cool it for that user, in every process", async () => {
    const subscriber = new Redis(server.url);
    const feed = new InvalidationFeed(subscriber);
    const other = new ChannelHealth(new Redis(server.url), options);
    feed.on((m) => other.hear(m));
    await feed.start();
    const health = new ChannelHealth(redis, options);
    const channel = await newChannel();
    const byUser = (userId: number) => ({ ...transient, userId });
    expect(await health.recordFailure(channel.id, byUser(7))).toBe('none');
    expect(await health.recordFailure(channel.id, byUser(7))).toBe('none');
    expect(await health.recordFailure(channel.id, byUser(7))).toBe('caller-cooldown');
    expect(health.isCoolingDown(channel.id)).toBe(false);
    expect(health.isCoolingDown(channel.id, 8)).toBe(false);
    expect(health.isCoolingDown(channel.id, 7)).toBe(true);
    await expect.poll(() => other.isCoolingDown(channel.id, 7), { timeout: 1000 }).toBe(true);
    expect(other.isCoolingDown(channel.id, 8)).toBe(false);
    // A new streak, from two users: the whole channel.
    expect(await health.recordFailure(channel.id, byUser(7))).toBe('none');
    expect(await health.recordFailure(channel.id, byUser(8))).toBe('none');
    expect(await health.recordFailure(channel.id, byUser(7))).toBe('cooldown');
    expect(health.isCoolingDown(channel.id, 9)).toBe(true);
    feed.close();
  });

  it('shares cooldowns between processes: announced at once, and loaded by a newcomer', async () => {
    const subscriber = new Redis(server.url);
    const feed = new InvalidationFeed(subscriber);
    const other = new ChannelHealth(new Redis(server.url), options);
    feed.on((m) => other.hear(m));
    await feed.start();
    const health = new ChannelHealth(redis, { ...options, failuresBeforeCooldown: 1 });
    const channel = await newChannel();
    await health.recordFailure(channel.id, transient);
    await expect.poll(() => other.isCoolingDown(channel.id), { timeout: 1000 }).toBe(true);

    const newcomer = new ChannelHealth(new Redis(server.url), options);
    expect(newcomer.isCoolingDown(channel.id)).toBe(false);
    await newcomer.load([channel.id]);
    expect(newcomer.isCoolingDown(channel.id)).toBe(true);
    feed.close();
  });
});
