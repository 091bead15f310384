/** The per-key requests-per-minute limit, over a real Redis shared by two connections, as two gateways share it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '@gateway/queue';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { KeyRateLimit } from './key-rate-limit.ts';

let server: TestRedis;
let a: Redis;
let b: Redis;

beforeAll(async () => {
  server = await useTestRedis();
  a = createRedis(server.url, { name: 'a' });
  b = createRedis(server.url, { name: 'b' });
});
afterAll(async () => {
  a.disconnect();
  b.disconnect();
  await server.close();
});

describe('per-key rate limit', () => {
  it('holds across two limiters on separate connections, and answers 429 with Retry-After', async () => {
    const first = new KeyRateLimit(a);
    const second = new KeyRateLimit(b);
    const now = Date.UTC(2026, 0, 1, 0, 0, 0); // the start of a minute: no carry-over
    const outcomes = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? first : second).check(42, 10, now)),
    );
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(10);
    const refusal = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(refusal.reason).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(refusal.reason.retryAfter).toBeGreaterThanOrEqual(1);
    // Another key is not affected; no limit means no limit.
    await expect(first.check(43, 10, now)).resolves.toBeUndefined();
    await expect(first.check(42, 0, now)).resolves.toBeUndefined();
  });

  it('counts the previous minute in proportion, so a burst at a minute boundary is not doubled', async () => {
    const limiter = new KeyRateLimit(a);
    const minute = Date.UTC(2026, 0, 1, 0, 5, 0);
    for (let i = 0; i < 10; i++) await limiter.check(7, 10, minute + 59_000);
    // Half a minute later, half of the previous minute still counts: only ~5 more fit.
    const next = await Promise.allSettled(Array.from({ length: 10 }, () => limiter.check(7, 10, minute + 90_000)));
    expect(next.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
  });
});
