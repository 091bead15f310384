/**
 * The management API end to end: real Redis, real admin-worker and gateway processes, HTTP.
 */
import { describe, expect } from 'vitest';
import type { Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ env: { MANAGEMENT_BODY_LIMIT_BYTES: '2048' } });
const secrets = { userPassword: 'alice-password-1', channelKey: 'sk-upstream-very-secret-key-42' };

async function raw(stack: Stack, method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) {
  const response = await fetch(stack.gateway.url + path, { method, body: init.body, headers: init.headers });
  return { status: response.status, body: (await response.json()) as any };
}

async function userCount(stack: Stack): Promise<number> {
  return (await stack.admin('GET', '/api/user/?page_size=100')).body.data.total;
}

describe('the operator workflow', () => {
  it('creates a user and two tagged channels, disables them by tag, updates one, logs the user in, and keeps it all across restarts', async ({ stack }) => {
    const user = await stack.admin('POST', '/api/user/', { username: 'alice', password: secrets.userPassword, display_name: 'Alice' });
    expect(user.status).toBe(200);
    expect(user.body).toMatchObject({ success: true, message: '', data: { username: 'alice', role: 1, status: 1 } });
    expect(user.body.data).not.toHaveProperty('password');
    expect(user.body.data).not.toHaveProperty('password_hash');

    const channelBody = { type: 'openai', key: secrets.channelKey, base_url: 'http://127.0.0.1:9/', models: 'gpt-a, gpt-b', tag: 't' };
    const one = await stack.admin('POST', '/api/channel/', { ...channelBody, name: 'one' });
    const two = await stack.admin('POST', '/api/channel/', { ...channelBody, name: 'two', model_mapping: '{"gpt-a":"gpt-a-2024"}' });
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ models: ['gpt-a', 'gpt-b'], status: 1, tag: 't', group: 'default' });
    expect(two.body.data.model_mapping).toEqual({ 'gpt-a': 'gpt-a-2024' });
    expect(one.body.data.key).not.toBe(secrets.channelKey);
    expect(one.body.data.key).toMatch(/^sk-up\*+y-42$/);

    const disabled = await stack.admin('POST', '/api/channel/tag/disabled', { tag: 't' });
    expect(disabled.body).toEqual({ success: true, message: '', data: { count: 2 } });
    const listed = await stack.admin('GET', '/api/channel/?tag=t');
    expect(listed.body.data.items.map((c: any) => c.status)).toEqual([2, 2]);

    const updated = await stack.admin('PUT', '/api/channel/', { id: one.body.data.id, priority: 7, weight: 3 });
    expect(updated.body.data).toMatchObject({ id: one.body.data.id, name: 'one', priority: 7, weight: 3, status: 2, tag: 't' });

    const login = await raw(stack, 'POST', '/api/user/login', {
      body: JSON.stringify({ username: 'alice', password: secrets.userPassword }),
      headers: { 'content-type': 'application/json' },
    });
    expect(login.status).toBe(200);
    expect(login.body.data).toMatchObject({ id: user.body.data.id, username: 'alice', role: 1 });
    const aliceToken: string = login.body.data.access_token;
    expect((await stack.admin('GET', '/api/user/self', undefined, aliceToken)).body.data.username).toBe('alice');

    // Every process, Redis included, goes down and comes back: the records are still there.
    await Promise.all(stack.services.map((s) => s.stop('SIGTERM')));
    stack.services.length = 0;
    await stack.redis.stop();
    await stack.redis.restart();
    await stack.add('admin-worker');
    stack.gateway = await stack.add('gateway');
    const after = await stack.admin('GET', `/api/channel/${one.body.data.id}`);
    expect(after.body.data).toMatchObject({ name: 'one', priority: 7, weight: 3, status: 2 });
    expect((await stack.admin('GET', '/api/channel/?tag=t')).body.data.total).toBe(2);
    expect((await stack.admin('GET', '/api/user/self', undefined, aliceToken)).body.data.username).toBe('alice');
  });

  it('runs API-key management: the full key once, masked afterwards, revoked on delete', async ({ stack }) => {
    const created = await stack.admin('POST', '/api/token/', { name: 'ci', unlimited_quota: true, models: 'gpt-a' });
    expect(created.status).toBe(200);
    expect(created.body.data.key).toMatch(/^sk-[A-Za-z0-9]{48}$/);
    expect(created.body.data.models).toEqual(['gpt-a']);
    const list = await stack.admin('GET', '/api/token/');
    const listed = list.body.data.items.find((t: any) => t.id === created.body.data.id);
    expect(listed.key).not.toBe(created.body.data.key);
    expect(listed.key).toContain('****');
    const renamed = await stack.admin('PUT', '/api/token/', { id: created.body.data.id, name: 'ci-2', status: 2 });
    expect(renamed.body.data).toMatchObject({ name: 'ci-2', status: 2 });
    expect((await stack.admin('DELETE', `/api/token/${created.body.data.id}`)).status).toBe(200);
    expect((await stack.admin('GET', `/api/token/${created.body.data.id}`)).status).toBe(404);
  });

  it('deletes a user, after which its access token no longer works', async ({ stack }) => {
    await stack.admin('POST', '/api/user/', { username: 'gone', password: 'gone-password' });
    const login = await raw(stack, 'POST', '/api/user/login', {
      body: JSON.stringify({ username: 'gone', password: 'gone-password' }),
      headers: { 'content-type': 'application/json' },
    });
    const list = await stack.admin('GET', '/api/user/?keyword=gone');
    const id = list.body.data.items[0].id;
    expect((await stack.admin('DELETE', `/api/user/${id}`)).status).toBe(200);
    expect((await stack.admin('GET', '/api/user/self', undefined, login.body.data.access_token)).status).toBe(401);
    expect((await stack.admin('GET', `/api/user/${id}`)).status).toBe(404);
  });
});

describe('bad input gets the right status, names the problem and changes nothing', () => {
  const json = { 'content-type': 'application/json', authorization: '' };
  it.beforeAll(({ stack }) => {
    json.authorization = `Bearer ${stack.adminToken}`;
  });

  it.for([
    ['malformed JSON', '{"username": "x", ', 400, /malformed JSON/],
    ['a body that is not an object', '["alice"]', 400, /expected object/],
    ['an unknown field', '{"username":"zed","password":"password-1","colour":"red"}', 400, /unknown field: colour/],
    ['a wrong type', '{"username":"zed","password":"password-1","quota":"lots"}', 400, /quota/],
    ['an out-of-range value', '{"username":"zed","password":"password-1","quota":-5}', 400, /quota/],
    ['a username over 20 characters', `{"username":"${'z'.repeat(21)}","password":"password-1"}`, 400, /username.*1 to 20/],
    ['a password under 8 characters', '{"username":"zed","password":"short"}', 400, /password.*8 to 64/],
    ['a taken username', '{"username":"root","password":"password-1"}', 409, /already taken/],
  ] as const)('%s', async ([_case, body, status, message], { stack }) => {
    const before = await userCount(stack);
    const response = await raw(stack, 'POST', '/api/user/', { body, headers: json });
    expect(response.status).toBe(status);
    expect(response.body.success).toBe(false);
    expect(response.body.message).toMatch(message);
    expect(await userCount(stack)).toBe(before);
  });

  it('an unknown id is 404', async ({ stack }) => {
    const response = await stack.admin('PUT', '/api/user/', { id: 9999, display_name: 'x' });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ success: false, message: 'no user with id 9999' });
    expect((await stack.admin('DELETE', '/api/channel/9999')).status).toBe(404);
  });

  it('no credentials, a bad token and a revoked token are 401', async ({ stack }) => {
    const none = await raw(stack, 'POST', '/api/user/', { body: '{"username":"zed","password":"password-1"}', headers: { 'content-type': 'application/json' } });
    expect(none.status).toBe(401);
    expect(none.body.message).toMatch(/no credentials/);
    expect((await stack.admin('GET', '/api/user/', undefined, 'not-a-real-token')).status).toBe(401);

    await stack.admin('POST', '/api/user/', { username: 'relogin', password: 'relogin-pass' });
    const login = () => raw(stack, 'POST', '/api/user/login', { body: '{"username":"relogin","password":"relogin-pass"}', headers: { 'content-type': 'application/json' } });
    const first = (await login()).body.data.access_token;
    const second = (await login()).body.data.access_token;
    expect((await stack.admin('GET', '/api/user/self', undefined, first)).status).toBe(401);
    expect((await stack.admin('GET', '/api/user/self', undefined, second)).status).toBe(200);
    const wrong = await raw(stack, 'POST', '/api/user/login', { body: '{"username":"relogin","password":"not-it-at-all"}', headers: { 'content-type': 'application/json' } });
    expect(wrong.status).toBe(401);
  });

  it('a common user on a management route is 403', async ({ stack }) => {
    await stack.admin('POST', '/api/user/', { username: 'commoner', password: 'commoner-pass' });
    const login = await raw(stack, 'POST', '/api/user/login', { body: '{"username":"commoner","password":"commoner-pass"}', headers: { 'content-type': 'application/json' } });
    const token = login.body.data.access_token;
    const response = await stack.admin('POST', '/api/channel/tag/disabled', { tag: 't' }, token);
    expect(response.status).toBe(403);
    expect(response.body.success).toBe(false);
    expect((await stack.admin('GET', '/api/channel/?tag=t')).body.data.items.every((c: any) => c.status === 2)).toBe(true);
    // A common user does manage its own API keys.
    expect((await stack.admin('POST', '/api/token/', { name: 'mine' }, token)).status).toBe(200);
    expect((await stack.admin('POST', '/api/token/', { name: 'theirs', user_id: 1 }, token)).status).toBe(403);
  });

  it('an admin may not create or edit an admin or root, nor grant its own role', async ({ stack }) => {
    await stack.admin('POST', '/api/user/', { username: 'boss', password: 'boss-password', role: 10 });
    await stack.admin('POST', '/api/user/', { username: 'peer', password: 'peer-password', role: 10 });
    await stack.admin('POST', '/api/user/', { username: 'minion', password: 'minion-password' });
    const token = (await raw(stack, 'POST', '/api/user/login', { body: '{"username":"boss","password":"boss-password"}', headers: { 'content-type': 'application/json' } })).body.data.access_token;
    const users = (await stack.admin('GET', '/api/user/?page_size=100')).body.data.items as any[];
    const peer = users.find((u) => u.username === 'peer');
    const minion = users.find((u) => u.username === 'minion');

    expect((await stack.admin('POST', '/api/user/', { username: 'admin2', password: 'admin2-pass', role: 10 }, token)).status).toBe(403);
    expect((await stack.admin('PUT', '/api/user/', { id: peer.id, display_name: 'hacked' }, token)).status).toBe(403);
    expect((await stack.admin('PUT', '/api/user/', { id: 1, password: 'new-root-pass' }, token)).status).toBe(403);
    expect((await stack.admin('PUT', '/api/user/', { id: minion.id, role: 10 }, token)).status).toBe(403);
    expect((await stack.admin('GET', `/api/user/${peer.id}`, undefined, token)).status).toBe(403);
    const visible = (await stack.admin('GET', '/api/user/?page_size=100', undefined, token)).body.data.items as any[];
    expect(visible.every((u) => u.role < 10)).toBe(true);
    // What it may do, it can.
    const edited = await stack.admin('PUT', '/api/user/', { id: minion.id, display_name: 'Minion', quota: 500 }, token);
    expect(edited.body.data).toMatchObject({ display_name: 'Minion', quota: 500, username: 'minion' });
    expect((await stack.admin('GET', `/api/user/${peer.id}`)).body.data.display_name).toBe('peer');
  });

  it('a New-Api-User header that does not match the token is 401', async ({ stack }) => {
    const response = await fetch(stack.gateway.url + '/api/user/self', { headers: { authorization: stack.adminToken, 'new-api-user': '2' } });
    expect(response.status).toBe(401);
    const matching = await fetch(stack.gateway.url + '/api/user/self', { headers: { authorization: stack.adminToken, 'new-api-user': '1' } });
    expect(matching.status).toBe(200);
  });

  it('a body over MANAGEMENT_BODY_LIMIT_BYTES is 413, a wrong Content-Type 415', async ({ stack }) => {
    const before = await userCount(stack);
    const big = await raw(stack, 'POST', '/api/user/', { body: JSON.stringify({ username: 'big', password: 'big-password', display_name: 'x'.repeat(4096) }), headers: json });
    expect(big.status).toBe(413);
    expect(big.body.success).toBe(false);
    const text = await raw(stack, 'POST', '/api/user/', { body: 'username=zed', headers: { ...json, 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body.message).toMatch(/Content-Type/);
    expect(await userCount(stack)).toBe(before);
  });

  it('an invalid channel field names it', async ({ stack }) => {
    const response = await stack.admin('POST', '/api/channel/', { name: 'x', type: 'cohere', key: 'k', base_url: 'http://x', models: ['m'] });
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/type/);
    const mapping = await stack.admin('POST', '/api/channel/', { name: 'x', type: 'openai', key: 'k', base_url: 'http://x', models: ['m'], model_mapping: '{not json' });
    expect(mapping.status).toBe(400);
    expect(mapping.body.message).toMatch(/model_mapping/);
  });
});

describe('operations', () => {
  it('two admin-worker processes share the admin queue', async ({ stack }) => {
    await stack.add('admin-worker');
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => stack.admin('POST', '/api/user/', { username: `bulk${i}`, password: 'bulk-password' })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(40);
    const duplicates = await Promise.all(
      Array.from({ length: 10 }, () => stack.admin('POST', '/api/user/', { username: 'samename', password: 'bulk-password' })),
    );
    expect(duplicates.filter((r) => r.status === 200)).toHaveLength(1);
    expect(duplicates.filter((r) => r.status === 409)).toHaveLength(9);
  });

  it('answers health and readiness, and gives a request id', async ({ stack }) => {
    const health = await fetch(stack.gateway.url + '/healthz');
    expect(health.status).toBe(200);
    const ready = await fetch(stack.gateway.url + '/readyz', { headers: { 'x-request-id': 'trace-me-123' } });
    expect(ready.status).toBe(200);
    expect(ready.headers.get('x-request-id')).toBe('trace-me-123');
  });

  it('never writes a secret to a log line', async ({ stack }) => {
    // Log lines go out through asynchronous destinations, in order: once a last request's lines
    // (the gateway's and the admin worker's) have arrived, every earlier line has too.
    const marker = 'last-request-before-the-log-check';
    await fetch(stack.gateway.url + '/api/user/self', { headers: { authorization: `Bearer ${stack.adminToken}`, 'x-request-id': marker } });
    const linesOf = (name: string) => stack.services.filter((s) => s.name === name).flatMap((s) => s.logs).filter((l) => l.reqId === marker);
    await expect.poll(() => linesOf('gateway').length).toBeGreaterThan(0);
    await expect.poll(() => linesOf('admin-worker').length).toBeGreaterThan(0);
    const output = stack.services.flatMap((s) => s.output).join('\n');
    expect(output.length).toBeGreaterThan(0);
    expect(output).not.toContain(stack.adminToken);
    expect(output).not.toContain(secrets.userPassword);
    expect(output).not.toContain(secrets.channelKey);
  });

  it('reports not ready while Redis is down, and recovers', async ({ stack }) => {
    await stack.redis.stop();
    const down = await fetch(stack.gateway.url + '/readyz');
    expect(down.status).toBe(503);
    expect(((await down.json()) as any).reason).toMatch(/redis/);
    const started = Date.now();
    const refused = await stack.admin('GET', '/api/user/self');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(Date.now() - started).toBeLessThan(1000);
    await stack.redis.restart();
    await expect.poll(async () => (await fetch(stack.gateway.url + '/readyz')).status, { timeout: 5000 }).toBe(200);
    expect((await stack.admin('GET', '/api/user/self')).status).toBe(200);
  });
});
