/**
 * Secrets stay secret (issue 10): channel keys encrypted at rest and decrypted only by the model
 * worker; no password or channel key in anything sent to Redis (so in no job, no AOF, no
 * dashboard); credentials revoked when they should be; sign-ins throttled across gateways, in
 * a lane of their own.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockOpenAIUpstream, startStack, type MockOpenAIUpstream, type ServiceProcess, type Stack } from '@gateway/testkit';

let stack: Stack;
let mock: MockOpenAIUpstream;
let otherGateway: ServiceProcess;

beforeAll(async () => {
  stack = await startStack({
    workers: ['completion-worker'],
    env: { LOGIN_FAILURES_PER_USER: '5', LOGIN_FAILURES_PER_ADDRESS: '1000', LOGIN_WINDOW_SECONDS: '60', ADMIN_PASSWORD: 'root-password-1' },
  });
  otherGateway = await stack.add('gateway');
  mock = await startMockOpenAIUpstream();
});
afterAll(async () => {
  await mock?.close();
  await stack?.stop();
});

const ok = (method: string, path: string, body?: unknown, token?: string) => stack.adminData(method, path, body, token);

const login = (username: string, password: string, gateway = stack.gateway.url) =>
  fetch(`${gateway}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) });

async function dashboardSession(username: string, password: string): Promise<string> {
  const response = await fetch(`${stack.gateway.url}/admin/queues/login`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.gateway.url }, body: new URLSearchParams({ username, password }),
  });
  expect(response.status).toBe(303);
  return /gw_dashboard=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')![1]!;
}

const boardStatus = async (cookie: string) => (await fetch(`${stack.gateway.url}/admin/queues/api/queues`, { headers: { cookie: `gw_dashboard=${cookie}` } })).status;
const selfStatus = async (token: string) => (await fetch(`${stack.gateway.url}/api/user/self`, { headers: { authorization: `Bearer ${token}` } })).status;

describe('channel keys', () => {
  it('are stored encrypted, shown masked, and reach the upstream in clear only from the model worker', async () => {
    const secret = 'sk-upstream-key-that-must-stay-secret-42';
    const channel = await ok('POST', '/api/channel/', { name: 'enc', type: 'openai', key: secret, base_url: mock.url, models: ['enc-model'] });
    expect(channel.key).toBe('sk-up********t-42');
    const stored = await new Redis(stack.redis.url).hgetall(`gw:{store}:channel:${channel.id}`);
    expect(stored.key).toMatch(/^enc:v1:[0-9a-f]{8}:/);
    expect(JSON.stringify(stored)).not.toContain('key-that-must-stay-secret');

    const key = (await ok('POST', '/api/token/', { name: 'enc', unlimited_quota: true })).key;
    const reply = await fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'enc-model', prompt: 'hi' }),
    });
    expect(reply.status).toBe(200);
    expect(mock.requests.at(-1)!.authorization).toBe(`Bearer ${secret}`);
  });
});

describe('nothing sent to Redis holds a password, a channel key, or a token, key or session made for a client', () => {
  it('holds for sign-ins, users, channels, API keys and the dashboard', async () => {
    const monitor = await new Redis(stack.redis.url).monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(args.join(' ')));
    const secrets = ['alice-password-1', 'alice-password-2', 'root-password-1', 'sk-channel-key-in-clear-77', 'sk-channel-key-in-clear-88'];

    const alice = await ok('POST', '/api/user/', { username: 'alice', password: secrets[0], role: 10 });
    await ok('PUT', '/api/user/', { id: alice.id, password: secrets[1] });
    const signedIn = await login('alice', secrets[1]!);
    expect(signedIn.status).toBe(200);
    const accessToken = ((await signedIn.json()) as any).data.access_token as string;
    const ch = await ok('POST', '/api/channel/', { name: 'c', type: 'openai', key: secrets[3], base_url: mock.url, models: ['x'] });
    await ok('PUT', '/api/channel/', { id: ch.id, key: secrets[4], base_url: mock.url });
    const apiKey = (await ok('POST', '/api/token/', { name: 'monitored' })).key as string;
    const session = await dashboardSession('root', secrets[2]!);
    // Each of them works: they were made, and only their digests were stored.
    expect(await selfStatus(accessToken)).toBe(200);
    expect(apiKey).toMatch(/^sk-\w{48}$/);
    expect(await boardStatus(session)).toBe(200);
    secrets.push(accessToken, apiKey, session);
    // A window on purpose: what the services write after answering (usage, last use) is watched too.
    await new Promise((r) => setTimeout(r, 300));
    monitor.disconnect();

    expect(seen.length).toBeGreaterThan(20);
    for (const secret of secrets) expect(seen.filter((line) => line.includes(secret)), secret).toEqual([]);
  });
});

describe('revocation', () => {
  it('a new password ends the access token and the dashboard sessions of that user', async () => {
    const bob = await ok('POST', '/api/user/', { username: 'bob', password: 'bob-password-1', role: 10 });
    const token = (await (await login('bob', 'bob-password-1')).json() as any).data.access_token;
    const session = await dashboardSession('bob', 'bob-password-1');
    expect(await selfStatus(token)).toBe(200);
    expect(await boardStatus(session)).toBe(200);

    await ok('PUT', '/api/user/', { id: bob.id, password: 'bob-password-2' });
    expect(await selfStatus(token)).toBe(401);
    expect(await boardStatus(session)).toBe(401);
    expect((await login('bob', 'bob-password-2')).status).toBe(200);
  });

  it('disabling a user ends them too, for good: enabling it again does not revive them', async () => {
    const carol = await ok('POST', '/api/user/', { username: 'carol', password: 'carol-password', role: 10 });
    const token = (await (await login('carol', 'carol-password')).json() as any).data.access_token;
    const session = await dashboardSession('carol', 'carol-password');
    await ok('PUT', '/api/user/', { id: carol.id, status: 2 });
    await ok('PUT', '/api/user/', { id: carol.id, status: 1 });
    expect(await selfStatus(token)).toBe(401);
    expect(await boardStatus(session)).toBe(401);
  });

  it("a root login with the password leaves the environment's ADMIN_TOKEN valid", async () => {
    const response = await login('root', 'root-password-1');
    expect(response.status).toBe(200);
    const rootToken = (await response.json() as any).data.access_token;
    expect(await selfStatus(stack.adminToken)).toBe(200);
    expect(await selfStatus(rootToken)).toBe(200);
  });
});

describe('sign-in throttling', () => {
  it('after 5 failures a username waits (429, Retry-After), even with the right password, on every gateway', async () => {
    await ok('POST', '/api/user/', { username: 'dave', password: 'dave-password' });
    for (let i = 0; i < 5; i++) expect((await login('dave', `wrong-${i}`, i % 2 ? otherGateway.url : stack.gateway.url)).status).toBe(401);
    for (const gateway of [stack.gateway.url, otherGateway.url]) {
      const refused = await login('dave', 'dave-password', gateway);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ success: false, message: expect.stringMatching(/too many failed sign-ins/) });
    }
    // Other names are not held back by dave's failures.
    expect((await login('root', 'root-password-1')).status).toBe(200);
  });

  it('counts attempts made in parallel at once: 20 at the same moment get at most 5 password checks', async () => {
    await ok('POST', '/api/user/', { username: 'erin', password: 'erin-password' });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login('erin', `wrong-${i}`, i % 2 ? otherGateway.url : stack.gateway.url)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(15);
  });

  it('keeps management fast while a flood of sign-ins is hashed in its own lane', async () => {
    let answered = 0;
    const flood = Array.from({ length: 150 }, (_, i) => login(`flood-${i}`, 'wrong-password').then((answer) => (answered++, answer)));
    // The lane is busy once the first sign-ins of the flood have been hashed and answered.
    await expect.poll(() => answered, { interval: 10 }).toBeGreaterThan(0);
    const started = Date.now();
    await ok('GET', '/api/channel/');
    const managementMs = Date.now() - started;
    const answers = await Promise.all(flood);
    expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true);
    expect(managementMs).toBeLessThan(1000);
  });
});
