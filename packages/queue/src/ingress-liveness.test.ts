import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis, type TestRedis } from '@gateway/testkit';
import { IngressLiveness } from './ingress-liveness.ts';
import { createRedis, type Redis } from './redis-connection.ts';
import { ingressKey } from './reply-keys.ts';

let server: TestRedis;
let redis: Redis;

beforeAll(async () => {
  server = await useTestRedis();
  redis = createRedis(server.url, { name: 'test' });
});
afterAll(async () => {
  redis.disconnect();
  await server.close();
});

describe('IngressLiveness', () => {
  it('takes an ingress whose heartbeat is back within one beat for alive (its key lost to a failover), and one without for gone', async () => {
    const liveness = new IngressLiveness(redis, { confirmAfterMs: 300 });
    // The key is missing at first, as on a promoted replica before the gateway's next beat.
    setTimeout(() => void redis.set(ingressKey('back'), '1', 'PX', 10_000), 100);
    expect(await liveness.isAlive('back')).toBe(true);
    const started = Date.now();
    // Jobs of one ingress starting together share one check.
    expect(await Promise.all([liveness.isAlive('gone'), liveness.isAlive('gone')])).toEqual([false, false]);
    expect(Date.now() - started).toBeLessThan(600);
    // A gone ingress stays gone without another wait.
    const again = Date.now();
    expect(await liveness.isAlive('gone')).toBe(false);
    expect(Date.now() - again).toBeLessThan(50);
  });
});
