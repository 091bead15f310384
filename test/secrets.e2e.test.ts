/**
 * Secrets stay secret (issue 10): channel keys encrypted at rest and decrypted only by the model
 * worker; no password or channel key in anything sent to Redis (so in no job, no AOF, no
 * dashboard); credentials revoked when they should be; sign-ins throttled across gateways, in
 * a lane of their own.
 */
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect } from 'vitest';
import type { ServiceProcess, Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker'],
  env: { LOGIN_FAILURES_PER_USER: '5', LOGIN_FAILURES_PER_ADDRESS: '1000', LOGIN_WINDOW_SECONDS: '60', ADMIN_PASSWORD: 'root-password-1' },
});

/** A second gateway: the sign-in throttle must hold across gateways. */
let otherGateway: ServiceProcess;
it.beforeAll(async ({ stack }) => {
  otherGateway = await stack.add('gateway');
});

const login = (stack: Stack, username: string, password: string, gateway = stack.gateway.url) =>
  fetch(`${gateway}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) });

async function dashboardSession(stack: Stack, username: string, password: string): Promise<string> {
  const response = await fetch(`${stack.gateway.url}/admin/queues/login`, {
    method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.gateway.url }, body: new URLSearchParams({ username, password }),
  });
  expect(response.status).toBe(303);
  return /gw_dashboard=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')![1]!;
}

const boardStatus = async (stack: Stack, cookie: string) => (await fetch(`${stack.gateway.url}/admin/queues/api/queues`, { headers: { cookie: `gw_dashboard=${cookie}` } })).status;
const selfStatus = async (stack: Stack, token: string) => (await fetch(`${stack.gateway.url}/api/user/self`, { headers: { authorization: `Bearer ${token}` } })).status;

describe('channel keys', () => {
  it('are stored encrypted, shown masked, and reach the upstream in clear only from the model worker', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const secret = 'sk-upstream-key-that-must-stay-secret-42';
    const created = await channel(mock, ['enc-model'], { name: 'enc', key: secret });
    expect(created.key).toBe('sk-up********t-42');
    const stored = await new Redis(stack.redis.url).hgetall(`gw:{store}:channel:${created.id}`);
    expect(stored.key).toMatch(/^enc:v1:[0-9a-f]{8}:/);
    expect(JSON.stringify(stored)).not.toContain('key-that-must-stay-secret');

    const { key } = await apiKey({ name: 'enc' });
    const reply = await fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'enc-model', prompt: 'hi' }),
    });
    expect(reply.status).toBe(200);
    expect(mock.requests.at(-1)!.authorization).toBe(`Bearer ${secret}`);
  });
});

describe('nothing sent to Redis holds a password, a channel key, or a token, key or session made for a client', () => {
  it('holds for sign-ins, users, channels, API keys and the dashboard', async ({ stack, upstream }) => {
    const mock = await upstream.openai();
    // MONITOR on a plain socket: every command Redis receives, as it prints it. (ioredis's own
    // monitor() lost its footing under load: "Command queue state error" on a line that came
    // before it had switched the connection over.)
    const url = new URL(stack.redis.url);
    const monitor = connect(Number(url.port), url.hostname);
    let printed = '';
    monitor.setEncoding('utf8');
    monitor.on('data', (text: string) => { printed += text; });
    await new Promise<void>((resolve, reject) => monitor.once('connect', resolve).once('error', reject));
    monitor.write('MONITOR\r\n');
    await expect.poll(() => printed.startsWith('+OK')).toBe(true);
    const secrets = ['alice-password-1', 'alice-password-2', 'root-password-1', 'sk-channel-key-in-clear-77', 'sk-channel-key-in-clear-88'];

    const alice = await stack.adminData('POST', '/api/user/', { username: 'alice', password: secrets[0], role: 10 });
    await stack.adminData('PUT', '/api/user/', { id: alice.id, password: secrets[1] });
    const signedIn = await login(stack, 'alice', secrets[1]!);
    expect(signedIn.status).toBe(200);
    const accessToken = ((await signedIn.json()) as any).data.access_token as string;
    const ch = await stack.adminData('POST', '/api/channel/', { name: 'c', type: 'openai', key: secrets[3], base_url: mock.url, models: ['x'] });
    await stack.adminData('PUT', '/api/channel/', { id: ch.id, key: secrets[4], base_url: mock.url });
    const apiKey = (await stack.adminData('POST', '/api/token/', { name: 'monitored' })).key as string;
    const session = await dashboardSession(stack, 'root', secrets[2]!);
    // Each of them works: they were made, and only their digests were stored.
    expect(await selfStatus(stack, accessToken)).toBe(200);
    expect(apiKey).toMatch(/^sk-\w{48}$/);
    expect(await boardStatus(stack, session)).toBe(200);
    secrets.push(accessToken, apiKey, session);
    // A window on purpose: what the services write after answering (usage, last use) is watched too.
    await new Promise((r) => setTimeout(r, 300));
    monitor.destroy();

    const seen = printed.split('\r\n').slice(1).filter(Boolean);
    expect(seen.length).toBeGreaterThan(20);
    for (const secret of secrets) expect(seen.filter((line) => line.includes(secret)), secret).toEqual([]);
  });
});

describe('revocation', () => {
  it('a new password ends the access token and the dashboard sessions of that user', async ({ stack }) => {
    const bob = await stack.adminData('POST', '/api/user/', { username: 'bob', password: 'bob-password-1', role: 10 });
    const token = (await (await login(stack, 'bob', 'bob-password-1')).json() as any).data.access_token;
    const session = await dashboardSession(stack, 'bob', 'bob-password-1');
    expect(await selfStatus(stack, token)).toBe(200);
    expect(await boardStatus(stack, session)).toBe(200);

    await stack.adminData('PUT', '/api/user/', { id: bob.id, password: 'bob-password-2' });
    expect(await selfStatus(stack, token)).toBe(401);
    expect(await boardStatus(stack, session)).toBe(401);
    expect((await login(stack, 'bob', 'bob-password-2')).status).toBe(200);
  });

  it('disabling a user ends them too, for good: enabling it again does not revive them', async ({ stack }) => {
    const carol = await stack.adminData('POST', '/api/user/', { username: 'carol', password: 'carol-password', role: 10 });
    const token = (await (await login(stack, 'carol', 'carol-password')).json() as any).data.access_token;
    const session = await dashboardSession(stack, 'carol', 'carol-password');
    await stack.adminData('PUT', '/api/user/', { id: carol.id, status: 2 });
    await stack.adminData('PUT', '/api/user/', { id: carol.id, status: 1 });
    expect(await selfStatus(stack, token)).toBe(401);
    expect(await boardStatus(stack, session)).toBe(401);
  });

  it("a root login with the password leaves the environment's ADMIN_TOKEN valid", async ({ stack }) => {
    const response = await login(stack, 'root', 'root-password-1');
    expect(response.status).toBe(200);
    const rootToken = (await response.json() as any).data.access_token;
    expect(await selfStatus(stack, stack.adminToken)).toBe(200);
    expect(await selfStatus(stack, rootToken)).toBe(200);
  });
});

describe('sign-in throttling', () => {
  it('after 5 failures a username waits (429, Retry-After), even with the right password, on every gateway', async ({ stack }) => {
    await stack.adminData('POST', '/api/user/', { username: 'dave', password: 'dave-password' });
    for (let i = 0; i < 5; i++) expect((await login(stack, 'dave', `wrong-${i}`, i % 2 ? otherGateway.url : stack.gateway.url)).status).toBe(401);
    for (const gateway of [stack.gateway.url, otherGateway.url]) {
      const refused = await login(stack, 'dave', 'dave-password', gateway);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ success: false, message: expect.stringMatching(/too many failed sign-ins/) });
    }
    // Other names are not held back by dave's failures.
    expect((await login(stack, 'root', 'root-password-1')).status).toBe(200);
  });

  it('counts attempts made in parallel at once: 20 at the same moment get at most 5 password checks', async ({ stack }) => {
    await stack.adminData('POST', '/api/user/', { username: 'erin', password: 'erin-password' });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => login(stack, 'erin', `wrong-${i}`, i % 2 ? otherGateway.url : stack.gateway.url)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(15);
  });

  it('keeps management fast while a flood of sign-ins is hashed in its own lane', async ({ stack }) => {
    let answered = 0;
    const flood = Array.from({ length: 150 }, (_, i) => login(stack, `flood-${i}`, 'wrong-password').then((answer) => (answered++, answer)));
    // The lane is busy once the first sign-ins of the flood have been hashed and answered.
    await expect.poll(() => answered, { interval: 10 }).toBeGreaterThan(0);
    const started = Date.now();
    await stack.adminData('GET', '/api/channel/');
    const managementMs = Date.now() - started;
    const answers = await Promise.all(flood);
    expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true);
    expect(managementMs).toBeLessThan(1000);
  });
});
