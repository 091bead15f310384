import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { useTestStore, type TestRedis, type TestStore } from '@gateway/testkit';
import { createStore, hashPassword, issueApiKey, keys, verifyPassword, writeOnce, type Store } from './index.ts';

let db: TestStore;
let server: TestRedis;
let redis: Redis;
let store: Store;

beforeAll(async () => {
  db = await useTestStore();
  ({ server, redis, store } = db);
});
afterAll(async () => {
  await db.close();
});

describe('users', () => {
  it('keeps the username index in step with renames and deletes', async () => {
    const user = await store.users.create({ username: 'ann', password_hash: 'x' });
    expect(await redis.hget(keys.usernameIndex, 'ann')).toBe(String(user.id));
    await store.users.update(user.id, { username: 'anna' });
    expect(await redis.hget(keys.usernameIndex, 'ann')).toBeNull();
    expect((await store.users.findByUsername('anna'))?.id).toBe(user.id);
    await store.users.delete(user.id);
    expect(await redis.hget(keys.usernameIndex, 'anna')).toBeNull();
    expect(await store.users.get(user.id)).toBeNull();
  });

  it("keeps the skeleton index in step with renames and deletes, and indexes older users' names", async () => {
    const user = await store.users.create({ username: 'dirk', password_hash: 'x' });
    expect(await redis.hget(keys.usernameSkeletonIndex, 'dirk')).toBe(String(user.id));
    await expect(store.users.create({ username: 'd\u0131rk', password_hash: 'x' })).rejects.toMatchObject({ status: 409 });
    await store.users.update(user.id, { username: 'dolf' });
    expect(await redis.hget(keys.usernameSkeletonIndex, 'dirk')).toBeNull();
    expect(await redis.hget(keys.usernameSkeletonIndex, 'dolf')).toBe(String(user.id));
    await store.users.delete(user.id);
    expect(await redis.hget(keys.usernameSkeletonIndex, 'dolf')).toBeNull();

    // A user written before the index existed: indexed at the admin worker's start, once.
    const old = await store.users.create({ username: 'olga', password_hash: 'x' });
    await redis.hdel(keys.usernameSkeletonIndex, 'olga');
    expect(await store.users.indexSkeletons()).toBe(1);
    expect(await store.users.indexSkeletons()).toBe(0);
    await expect(store.users.create({ username: '\u1D0Flga', password_hash: 'x' }))
      .rejects.toMatchObject({ status: 409, message: expect.stringMatching(/looks like the name of an existing user/) });
    expect(await redis.hget(keys.usernameSkeletonIndex, 'olga')).toBe(String(old.id));
  });

  it('refuses a taken username with 409, on create and on rename', async () => {
    await store.users.create({ username: 'bob', password_hash: 'x' });
    const carl = await store.users.create({ username: 'carl', password_hash: 'x' });
    await expect(store.users.create({ username: 'bob', password_hash: 'y' })).rejects.toMatchObject({ status: 409 });
    await expect(store.users.update(carl.id, { username: 'bob' })).rejects.toMatchObject({ status: 409 });
    expect((await store.users.get(carl.id))?.username).toBe('carl');
  });

  it('lets exactly one of many concurrent renames to one name win, leaving no stray index entry', async () => {
    const users = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.users.create({ username: `racer${i}`, password_hash: 'x' })),
    );
    const outcomes = await Promise.allSettled(users.map((u) => store.users.update(u.id, { username: 'winner' })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const index = await redis.hgetall(keys.usernameIndex);
    for (const u of users) {
      const current = (await store.users.get(u.id))!;
      expect(index[current.username]).toBe(String(u.id));
    }
  });

  it('replaces the access token: the old one stops working at once', async () => {
    const user = await store.users.create({ username: 'dora', password_hash: 'x' });
    await store.users.setAccessToken(user.id, 'first-token-aaaaaaaaaaaa');
    expect((await store.users.findByAccessToken('first-token-aaaaaaaaaaaa'))?.id).toBe(user.id);
    await store.users.setAccessToken(user.id, 'second-token-bbbbbbbbbbb');
    expect(await store.users.findByAccessToken('first-token-aaaaaaaaaaaa')).toBeNull();
    expect((await store.users.findByAccessToken('second-token-bbbbbbbbbbb'))?.id).toBe(user.id);
    const raw = await redis.hgetall(keys.user(user.id));
    expect(JSON.stringify(raw)).not.toContain('second-token');
  });

  it('hashes passwords with scrypt and verifies them', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^scrypt\$/);
    expect(hash).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('wrong horse', hash)).toBe(false);
  });
});

describe('channels', () => {
  const base = { type: 'openai' as const, key: 'sk-upstream-1234567890', base_url: 'http://127.0.0.1:9', models: ['m'] };

  it('moves a channel between tag indexes on retag and drops it on delete', async () => {
    const channel = await store.channels.create({ ...base, name: 'a', tag: 'red' });
    expect(await redis.sismember(keys.channelTagIndex('red'), String(channel.id))).toBe(1);
    await store.channels.update(channel.id, { tag: 'blue' });
    expect(await redis.sismember(keys.channelTagIndex('red'), String(channel.id))).toBe(0);
    expect(await redis.sismember(keys.channelTagIndex('blue'), String(channel.id))).toBe(1);
    await store.channels.delete(channel.id);
    expect(await redis.sismember(keys.channelTagIndex('blue'), String(channel.id))).toBe(0);
  });

  it('disables and enables exactly the channels of a tag', async () => {
    const a = await store.channels.create({ ...base, name: 'a', tag: 'batch' });
    const b = await store.channels.create({ ...base, name: 'b', tag: 'batch' });
    const c = await store.channels.create({ ...base, name: 'c', tag: 'other' });
    expect(await store.channels.setStatusByTag('batch', 2, 'by tag')).toBe(2);
    expect((await store.channels.get(a.id))?.status).toBe(2);
    expect((await store.channels.get(b.id))?.status).toBe(2);
    expect((await store.channels.get(c.id))?.status).toBe(1);
    expect(await store.channels.setStatusByTag('batch', 1)).toBe(2);
    expect((await store.channels.get(a.id))?.status).toBe(1);
    expect(await store.channels.setStatusByTag('nobody', 2)).toBe(0);
  });

  it('changes only the fields given', async () => {
    const channel = await store.channels.create({ ...base, name: 'keep', priority: 5, model_mapping: { a: 'b' } });
    const updated = await store.channels.update(channel.id, { weight: 7 });
    expect(updated).toMatchObject({ name: 'keep', priority: 5, weight: 7, model_mapping: { a: 'b' }, key: base.key });
  });
});

describe('tokens', () => {
  it('stores only the hash of a key, finds it by the full key, and forgets it on delete', async () => {
    const { key, issued } = issueApiKey();
    const { token } = await store.tokens.create({ user_id: 1, name: 'ci' }, issued);
    expect(key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    const raw = JSON.stringify(await redis.hgetall(keys.token(token.id)));
    expect(raw).not.toContain(key.slice(3));
    expect((await store.tokens.findByKey(key))?.id).toBe(token.id);
    expect(await store.tokens.findByKey(key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a'))).toBeNull();
    await store.tokens.delete(token.id);
    expect(await store.tokens.findByKey(key)).toBeNull();
    expect(await redis.hlen(keys.tokenKeyIndex)).toBe(0);
  });

  it("checks a guarded change against the key as it is when written: a change landing after the check's read is not undone", async () => {
    const { token } = await store.tokens.create({ user_id: 1, name: 'raced', models: ['a', 'b'] }, issueApiKey().issued);
    // The user's check reads the key (enabled, models a and b); before its write, an
    // administrator disables the key and narrows its models (on the same connection, so in order).
    const seen: { status: number; models: string[] }[] = [];
    const onlyTightens = (current: { status: number; models: string[] }) => {
      seen.push({ status: current.status, models: current.models });
      if (seen.length === 1) void redis.hset(keys.token(token.id), 'status', '2', 'models', '["a"]');
      if (current.status !== 1) throw new Error('only an administrator may re-enable a key');
    };
    await expect(store.tokens.update(token.id, { status: 1, models: ['a', 'b'] }, onlyTightens)).rejects.toThrow(/re-enable/);
    expect(seen).toEqual([{ status: 1, models: ['a', 'b'] }, { status: 2, models: ['a'] }]);
    expect(await store.tokens.get(token.id)).toMatchObject({ status: 2, models: ['a'] });
    // A change of other fields goes through however often the key changed meanwhile.
    await store.tokens.update(token.id, { name: 'renamed' }, () => void redis.hset(keys.token(token.id), 'used_quota', String(Math.random())));
    expect(await store.tokens.get(token.id)).toMatchObject({ name: 'renamed', status: 2, models: ['a'] });
  });
});

describe("the environment's ADMIN_TOKEN", () => {
  it('survives logins and password changes, also when an older version kept it as the login token', async () => {
    const root = await store.users.create({ username: 'envroot', password_hash: 'x', role: 100 });
    // An older version stored ADMIN_TOKEN as the login token.
    await store.users.setAccessToken(root.id, 'env-admin-token-0123456789');
    await store.users.setEnvToken(root.id, 'env-admin-token-0123456789');
    await store.users.setAccessToken(root.id, 'a-login-token');
    await store.users.update(root.id, { password_hash: 'y' });
    expect((await store.users.findByAccessToken('env-admin-token-0123456789'))?.id).toBe(root.id);
    expect(await store.users.findByAccessToken('a-login-token')).toBeNull();
    await store.users.setEnvToken(root.id, null);
    expect(await store.users.findByAccessToken('env-admin-token-0123456789')).toBeNull();
  });

  it('leaves the printed login token working when it was set as ADMIN_TOKEN and then unset, until a sign-in replaces it', async () => {
    const root = await store.users.create({ username: 'printedroot', password_hash: 'x', role: 100 });
    await store.users.setAccessToken(root.id, 'printed-token-0123456789');
    for (const env of ['printed-token-0123456789', null, 'printed-token-0123456789', 'another-env-token-0123456', null]) {
      await store.users.setEnvToken(root.id, env);
      expect((await store.users.findByAccessToken('printed-token-0123456789'))?.id).toBe(root.id);
    }
    expect(await store.users.findByAccessToken('another-env-token-0123456')).toBeNull();
    await store.users.setAccessToken(root.id, 'a-new-login-token-0123456');
    expect(await store.users.findByAccessToken('printed-token-0123456789')).toBeNull();
  });
});

describe('the key layout', () => {
  it('moves a store written under the untagged names to the {store}-tagged ones, and reads it back', async () => {
    const { migrateKeyLayout } = await import('./key-layout.ts');
    // A store of its own (database 3), as an older version left it.
    const redis = new Redis(`${server.url}/3`);
    await redis.hset('gw:user:900', { id: '900', username: 'old-layout', password_hash: 'x', role: '1', status: '1', group: 'default', quota: '0', used_quota: '0', request_count: '0', display_name: '', email: '', access_token: '', session_epoch: '0', created_time: '0' });
    await redis.hset('gw:idx:username', 'old-layout', '900');
    await redis.sadd('gw:users', '900');
    await redis.set('gw:channel-leases:1', 'not a store key');
    expect(await migrateKeyLayout(redis)).toBe(3);
    expect(await redis.exists('gw:user:900', 'gw:idx:username', 'gw:users')).toBe(0);
    expect(await redis.get('gw:channel-leases:1')).toBe('not a store key');
    const user = await createStore(redis).users.get(900);
    expect(user?.username).toBe('old-layout');
    expect(await migrateKeyLayout(redis)).toBe(0);
    await redis.flushdb();
    redis.disconnect();
  });
});

describe('a write keyed by its job (a job run again after its worker died)', () => {
  it('creates once: a second run gets the record of the first, for channels, users and API keys', async () => {
    const once = writeOnce('job-create-1', Date.now() + 60_000);
    const channelInput = { name: 'once', type: 'openai' as const, key: 'enc:v1:x', base_url: 'http://example.com', models: ['m'] };
    const first = await store.channels.create(channelInput, once);
    const again = await store.channels.create(channelInput, once);
    expect(again.id).toBe(first.id);
    expect((await store.channels.all()).filter((c) => c.name === 'once')).toHaveLength(1);

    const userOnce = writeOnce('job-create-2', Date.now() + 60_000);
    const user = await store.users.create({ username: 'once-user', password_hash: 'x' }, userOnce);
    // Without the job's key, the same name would be a 409.
    expect((await store.users.create({ username: 'once-user', password_hash: 'x' }, userOnce)).id).toBe(user.id);

    const tokenOnce = writeOnce('job-create-3', Date.now() + 60_000);
    const { issued } = issueApiKey();
    const { token } = await store.tokens.create({ name: 'k', user_id: user.id }, issued, undefined, tokenOnce);
    const { token: same } = await store.tokens.create({ name: 'k', user_id: user.id }, issued, undefined, tokenOnce);
    expect(same.id).toBe(token.id);
    expect(await store.tokens.idsOfUser(user.id)).toEqual([token.id]);
  });

  it('deletes once: a second run succeeds instead of answering 404, and another job still gets 404', async () => {
    const channel = await store.channels.create({ name: 'gone', type: 'openai', key: 'enc:v1:x', base_url: 'http://example.com', models: ['m'] });
    const once = writeOnce('job-delete-1', Date.now() + 60_000);
    await store.channels.delete(channel.id, once);
    await store.channels.delete(channel.id, once);
    await expect(store.channels.delete(channel.id, writeOnce('job-delete-2', Date.now() + 60_000))).rejects.toMatchObject({ status: 404 });
  });

  it('keeps the job key only until the job could no longer run', async () => {
    const once = writeOnce('job-ttl', Date.now() + 5_000);
    await store.users.create({ username: 'ttl-user', password_hash: 'x' }, once);
    const ttl = await redis.pttl(once.key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(once.ttlMs);
  });
});
