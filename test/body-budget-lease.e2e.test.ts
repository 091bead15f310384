/**
 * A user's body budget (BODY_BUDGET_PER_USER_BYTES) leased in slices by two gateway processes
 * on one Redis: bodies held open on both stay within the one budget, and a gateway killed while
 * holding a lease stops counting when the lease's time is up, its room then served by the other.
 * Real processes and Redis; bodies declared by Content-Length and trickled, so each stays held.
 */
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';
import { describe, expect, onTestFinished } from 'vitest';
import { Redis } from 'ioredis';
import { stackTest } from '@gateway/testkit/fixtures';
import type { ServiceProcess } from '@gateway/testkit';

const BUDGET = 1024 * 1024;
const BODY = 100 * 1024;
/** A held body answers nothing until it ends; a refused one is answered at once (well within this). */
const SETTLE_MS = 3000;
/** A lease's time (BODY_LEASE_TTL_MS, 30 s by default): short, so a killed gateway's lease comes back within the test. */
const LEASE_TTL_MS = 8_000;
const it = stackTest({ env: { BODY_BUDGET_PER_USER_BYTES: String(BUDGET), BODY_TIMEOUT_MS: '120000', BODY_LEASE_TTL_MS: String(LEASE_TTL_MS) } });

interface OpenBody { answer: Promise<number | 'held'>; request: ClientRequest }

/** Begins a body of BODY bytes by Content-Length and trickles it: 'held', or the refusal's status. */
function openBody(gateway: ServiceProcess, key: string, agent: Agent, trickles: NodeJS.Timeout[]): OpenBody {
  const url = new URL(`${gateway.url}/v1/completions`);
  let request!: ClientRequest;
  const answered = new Promise<number>((resolve) => {
    request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': BODY } }, (res) => {
      if (res.statusCode === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      res.resume();
      resolve(res.statusCode ?? 0);
      request.destroy();
    });
    request.on('error', () => resolve(0));
  });
  request.write('{');
  trickles.push(setInterval(() => request.writable && request.write(' '), 500));
  return { answer: Promise.race([answered, new Promise<'held'>((r) => setTimeout(() => r('held'), SETTLE_MS))]), request };
}

const heldIn = async (redis: Redis, userId: number) =>
  Object.entries(await redis.hgetall(`gw:body:{${userId}}`)).reduce((sum, [field, v]) => (field.endsWith(':t') ? sum : sum + Number(v)), 0);

describe("a user's body budget leased by two gateways", () => {
  it("holds across both, and a killed gateway's lease comes back when its time is up", async ({ stack }) => {
    const redis = new Redis(stack.redis.url);
    const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
    const trickles: NodeJS.Timeout[] = [];
    const bodies: OpenBody[] = [];
    onTestFinished(() => {
      for (const timer of trickles) clearInterval(timer);
      for (const body of bodies) body.request.destroy();
      agent.destroy();
      redis.disconnect();
    });
    const user = await stack.adminData('POST', '/api/user/', { username: 'leaser', password: 'leaser-password' });
    const { key } = await stack.adminData('POST', '/api/token/', { name: 'lease', user_id: user.id, unlimited_quota: true });
    const live = stack.gateway;
    const doomed = await stack.add('gateway');
    const open = (gateway: ServiceProcess) => {
      const body = openBody(gateway, key, agent, trickles);
      bodies.push(body);
      return body.answer;
    };

    // 8 bodies of 100 KiB on each gateway at once, against 1 MiB: at most 10 held together (9
    // when the last refusal met the other's slice), some on each, the rest refused 429.
    const first = await Promise.all(Array.from({ length: 16 }, (_, i) => open(i % 2 ? doomed : live)));
    const heldOn = (gateway: number) => first.filter((a, i) => i % 2 === gateway && a === 'held').length;
    const tally = JSON.stringify(first);
    expect(first.every((a) => a === 'held' || a === 429), tally).toBe(true);
    expect(heldOn(0) + heldOn(1), tally).toBeGreaterThanOrEqual(9);
    expect(heldOn(0) + heldOn(1), tally).toBeLessThanOrEqual(10);
    expect(heldOn(0), tally).toBeGreaterThan(0);
    expect(heldOn(1), tally).toBeGreaterThan(0);
    // What Redis counts (the two leases) is within the budget.
    expect(await heldIn(redis, user.id)).toBeLessThanOrEqual(BUDGET);
    let liveHeld = heldOn(0);
    // Room a slice left: the live gateway fills it until refused.
    while ((await open(live)) === 'held') liveHeld++;

    // The other gateway dies holding its lease: the lease still counts until its time is up.
    await doomed.stop('SIGKILL');
    const killedAt = Date.now();
    expect(await open(live)).toBe(429);
    let back = 0;
    await expect.poll(async () => {
      const askedAt = Date.now();
      if ((await open(live)) !== 'held') return false;
      back = askedAt - killedAt;
      liveHeld++;
      return true;
    }, { timeout: 4 * LEASE_TTL_MS, interval: 1000 }).toBe(true);
    console.log(`[body lease] a killed gateway's lease came back after ${(back / 1000).toFixed(1)} s`);
    // At the lease's time after its last renewal (at most a third of it before the kill), give or
    // take one round of the poll (a body's settling included).
    expect(back).toBeGreaterThanOrEqual((LEASE_TTL_MS * 2) / 3 - 1000);
    expect(back).toBeLessThan(LEASE_TTL_MS + 6_000);
    // The live gateway alone now: exactly the budget's 10 bodies, and no more.
    while ((await open(live)) === 'held') liveHeld++;
    expect(liveHeld).toBe(10);
    expect(await heldIn(redis, user.id)).toBeLessThanOrEqual(BUDGET);
  }, 120_000);
});
