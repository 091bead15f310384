/**
 * Readiness covers root's credential (issue 18): on a first start, a script that waits for
 * `/readyz` and then calls the management API with ADMIN_TOKEN gets 200, never the 401 of the
 * moment before the admin worker has made ADMIN_TOKEN root's. Real processes on a fresh Redis.
 */
import { afterAll, expect, it } from 'vitest';
import { spawnRedis, startService, type ServiceProcess, type TestRedis } from '@gateway/testkit';

const adminToken = 'first-start-admin-token-0123456789';
let redis: TestRedis | undefined;
const services: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(services.map((s) => s.stop('SIGKILL')));
  await redis?.close();
});

const readyz = async (url: string) => {
  const answer = await fetch(`${url}/readyz`);
  return { status: answer.status, body: (await answer.json()) as { status: string; reason?: string } };
};
const self = (url: string) => fetch(`${url}/api/user/self`, { headers: { authorization: `Bearer ${adminToken}` } });

it('answers /readyz 200 only once ADMIN_TOKEN is a credential of root, so the first management call after it is a 200', async () => {
  redis = await spawnRedis();
  const env = { REDIS_URL: redis.url, ADMIN_TOKEN: adminToken };
  // The gateway first, on a Redis with no root user yet: up, but not ready.
  const gateway = await startService('gateway', env);
  services.push(gateway);
  expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  const early = await readyz(gateway.url);
  expect(early).toEqual({ status: 503, body: { status: 'unavailable', reason: expect.stringMatching(/ADMIN_TOKEN is not yet a credential of the root user/) } });
  expect((await self(gateway.url)).status).toBe(401);

  // The admin worker starting meanwhile: what a script polling /readyz sees.
  const worker = startService('admin-worker', env).then((s) => (services.push(s), s));
  let polls = 0;
  for (;;) {
    polls++;
    if ((await readyz(gateway.url)).status === 200) break;
    await new Promise((r) => setTimeout(r, 5)); // the poll's pace
  }
  const answer = await self(gateway.url);
  expect(answer.status).toBe(200);
  expect(((await answer.json()) as { data: { username: string } }).data.username).toBe('root');
  expect(polls).toBeGreaterThan(1);
  await worker;
});
