/**
 * Management jobs under kill -9: an admin worker killed while it holds jobs leaves them to run
 * again as stalled on another worker. A job whose write had committed must not write again: 400
 * channel creations make exactly 400 channels, and every client gets its answer.
 */
import { expect } from 'vitest';
import { Redis } from 'ioredis';
import { keys } from '@gateway/store';
import type { Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const test = stackTest({ env: { ADMIN_CONCURRENCY: '64' } });

/**
 * Sends `count` creations from 64 clients, each sending its next when the last is answered, so
 * the work spans the kills; kills an admin worker with SIGKILL each time the records made pass
 * one of `killAt` (another worker is always there to take over its jobs once their locks lapse).
 * Returns every answer.
 */
async function createWhileKilling(stack: Stack, count: number, path: string, body: (i: number) => unknown, recordCount: () => Promise<number>, killAt: number[]) {
  // One worker more than the kills, started before the load, to take over the killed ones' jobs.
  while (stack.services.filter((s) => s.name === 'admin-worker' && s.child.exitCode === null).length <= killAt.length) await stack.add('admin-worker');
  const t0 = Date.now();
  const all: { status: number; body: any; ms: number }[] = [];
  let next = 0;
  const clients = Array.from({ length: 64 }, async () => {
    for (let i = next++; i < count; i = next++) all[i] = { ...(await stack.admin('POST', path, body(i))), ms: Date.now() - t0 };
  });
  const kills: string[] = [];
  for (const threshold of killAt) {
    await expect.poll(recordCount, { timeout: 30_000, interval: 5 }).toBeGreaterThanOrEqual(threshold);
    const victim = stack.services.find((s) => s.name === 'admin-worker' && s.child.exitCode === null)!;
    await victim.stop('SIGKILL');
    kills.push(`${Date.now() - t0} ms (${await recordCount()} made)`);
  }
  await Promise.all(clients);
  console.log(`[kill -9 admin-worker] ${count} × POST ${path}: killed at ${kills.join(', ')}; last answer at ${Math.max(...all.map((a) => a.ms))} ms`);
  return all;
}

test('400 channel creations with an admin worker killed mid-way make exactly 400 channels, each answered', async ({ stack }) => {
  const redis = new Redis(stack.redis.url);
  try {
    const answers = await createWhileKilling(
      stack, 400, '/api/channel/',
      (i) => ({ name: `burst-${i}`, type: 'openai', key: `sk-upstream-${i}`, base_url: 'http://127.0.0.1:9', models: ['m'] }),
      () => redis.zcard(keys.channels), [100, 250],
    );
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${JSON.stringify(a.body)}`)).toEqual([]);
    const ids = new Set(answers.map((a) => a.body.data.id));
    expect(ids.size).toBe(400);
    const names = (await Promise.all([...ids].map((id) => redis.hget(keys.channel(id), 'name')))).filter(Boolean);
    expect(new Set(names).size).toBe(400);
    expect(await redis.zcard(keys.channels)).toBe(400);
  } finally {
    redis.disconnect();
  }
}, 90_000);

test('API keys too: 300 creations with an admin worker killed mid-way make 300 keys, each of which works', async ({ stack }) => {
  const redis = new Redis(stack.redis.url);
  try {
    // Room for 300 more keys of root's (a user holds 100 by default).
    const root = await stack.adminData('GET', '/api/user/self');
    await stack.adminData('PUT', '/api/user/', { id: root.id, max_keys: 1000 });
    const before = await redis.zcard(keys.tokens);
    const answers = await createWhileKilling(
      stack, 300, '/api/token/',
      (i) => ({ name: `key-${i}`, unlimited_quota: true }),
      async () => (await redis.zcard(keys.tokens)) - before, [60, 180],
    );
    expect(answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${JSON.stringify(a.body)}`)).toEqual([]);
    expect(new Set(answers.map((a) => a.body.data.id)).size).toBe(300);
    expect((await redis.zcard(keys.tokens)) - before).toBe(300);
    // The key each client was shown is the key stored for its record.
    for (const answer of answers.slice(0, 20)) {
      const { id, key } = answer.body.data;
      expect(await redis.hget(keys.tokenKeyIndex, (await import('@gateway/store')).sha256(key))).toBe(String(id));
    }
  } finally {
    redis.disconnect();
  }
}, 90_000);
