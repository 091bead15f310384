/**
 * Batches as administrators see them (issue 19): every user's batches through the management
 * API (`/api/batch/`, new-api's envelope and pages), cancelled by an administrator whoever owns
 * them, and their progress on the dashboard's batch page, on real processes, Redis and
 * PostgreSQL. Owners use the official openai SDK, as in batches.e2e.test.ts.
 */
import { describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { stackTest, type MakeChannel, type Upstreams } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const ROOT_PASSWORD = 'root-password-for-tests';
const it = stackTest({ database: true, workers: ['completion-worker', 'batch-worker'], env: { ADMIN_PASSWORD: ROOT_PASSWORD }, channelDefaults: { timeout_ms: 30_000 } });

let seq = 0;
const client = (stack: Stack, key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });
const line = (model: string, i: number) => ({ custom_id: `req-${i}`, method: 'POST', url: '/v1/completions', body: { model, prompt: `prompt ${i}`, max_tokens: 5 } });

async function submit(openai: OpenAI, lines: unknown[], metadata: Record<string, string> = { run: String(++seq) }) {
  const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  const file = await openai.files.create({ file: await toFile(Buffer.from(text), 'batch.jsonl'), purpose: 'batch' });
  return openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h', metadata });
}

async function settled(openai: OpenAI, id: string): Promise<OpenAI.Batch> {
  let batch = await openai.batches.retrieve(id);
  await expect.poll(async () => (batch = await openai.batches.retrieve(id)).status, { timeout: 60_000, interval: 200 })
    .toMatch(/^(completed|failed|cancelled|expired)$/);
  return batch;
}

/** A user with an unlimited API key, and a password to sign in with. */
async function tenant(stack: Stack, role = 1) {
  const username = `ba${++seq}`;
  const user = await stack.adminData('POST', '/api/user/', { username, password: `${username}-password`, role });
  const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  const { access_token } = (await (await fetch(`${stack.gateway.url}/api/user/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password: `${username}-password` }),
  })).json() as any).data;
  return { id: user.id as number, username, key: key as string, accessToken: access_token as string, openai: client(stack, key) };
}

/**
 * A batch that stays `in_progress` with steady counts: three lines answered at once, two whose
 * upstream never answers (until the test ends: its mock is closed then).
 */
async function stuckBatch(upstream: Upstreams, channel: MakeChannel, openai: OpenAI, metadata?: Record<string, string>) {
  const fast = `fast-${++seq}`;
  const stuck = `stuck-${seq}`;
  await channel(await upstream.openai(), [fast]);
  await channel(await upstream.openai({ hang: true }), [stuck], { timeout_ms: 600_000 });
  const created = await submit(openai, [line(fast, 0), line(stuck, 1), line(fast, 2), line(stuck, 3), line(fast, 4)], metadata);
  await expect.poll(async () => (await openai.batches.retrieve(created.id)).request_counts, { timeout: 30_000 }).toEqual({ total: 5, completed: 3, failed: 0 });
  return openai.batches.retrieve(created.id);
}

/** `data` of a management answer that must be 200. */
const data = async (stack: Stack, path: string, token = stack.adminToken, method = 'GET') => stack.adminData(method, path, undefined, token);

/** What an owner sees of a batch, as the administrator's item must show it too. */
const ownerView = (batch: OpenAI.Batch) => ({ id: batch.id, status: batch.status, request_counts: batch.request_counts, metadata: batch.metadata, created_at: batch.created_at, input_file_id: batch.input_file_id });

describe('the management API lists every user\'s batches', () => {
  it('shows root two users\' batches, newest first, with the counts their owners see; filters by user and status; pages', async ({ stack, upstream, channel }) => {
    const model = `m-${++seq}`;
    await channel(await upstream.openai(), [model]);
    const alice = await tenant(stack);
    const bob = await tenant(stack);
    const aliceDone = await settled(alice.openai, (await submit(alice.openai, [line(model, 0), line(model, 1), line(model, 2)])).id);
    const bobFailed = await settled(bob.openai, (await submit(bob.openai, [line(model, 0), line(model, 0)])).id);
    const bobRunning = await stuckBatch(upstream, channel, bob.openai);
    expect([aliceDone.status, bobFailed.status, bobRunning.status]).toEqual(['completed', 'failed', 'in_progress']);

    const all = await data(stack, '/api/batch/?page_size=100');
    expect(all).toMatchObject({ page: 1, page_size: 100, total: expect.any(Number) });
    // Newest first (created_at is in seconds: batches made within one second come in id order).
    const createdAt = all.items.map((b: any) => b.created_at);
    expect(createdAt).toEqual([...createdAt].sort((a, b) => b - a));
    const byId = new Map<string, any>(all.items.filter((b: any) => [alice.id, bob.id].includes(b.user_id)).map((b: any) => [b.id, b]));
    expect([...byId.keys()].sort()).toEqual([bobRunning.id, bobFailed.id, aliceDone.id].sort());
    expect(byId.get(bobRunning.id)).toMatchObject({ ...ownerView(bobRunning), object: 'batch', user_id: bob.id, username: bob.username });
    expect(byId.get(bobRunning.id).request_counts).toEqual({ total: 5, completed: 3, failed: 0 });
    expect(byId.get(bobFailed.id)).toMatchObject({ ...ownerView(bobFailed), user_id: bob.id, username: bob.username });
    expect(byId.get(aliceDone.id)).toMatchObject({ ...ownerView(aliceDone), user_id: alice.id, username: alice.username });
    expect(byId.get(aliceDone.id).request_counts).toEqual({ total: 3, completed: 3, failed: 0 });

    const ofAlice = await data(stack, `/api/batch/?user_id=${alice.id}`);
    expect(ofAlice).toMatchObject({ total: 1, page: 1, page_size: 10 });
    expect(ofAlice.items.map((b: any) => b.id)).toEqual([aliceDone.id]);
    const failed = await data(stack, `/api/batch/?user_id=${bob.id}&status=failed`);
    expect(failed.items.map((b: any) => b.id)).toEqual([bobFailed.id]);
    const running = await data(stack, `/api/batch/?status=in_progress,finalizing`);
    expect(running.items.map((b: any) => b.id)).toContain(bobRunning.id);
    expect(running.items.every((b: any) => ['in_progress', 'finalizing'].includes(b.status))).toBe(true);

    const first = await data(stack, `/api/batch/?user_id=${bob.id}&p=1&page_size=1`);
    const second = await data(stack, `/api/batch/?user_id=${bob.id}&p=2&page_size=1`);
    const past = await data(stack, `/api/batch/?user_id=${bob.id}&p=3&page_size=1`);
    expect([first.total, second.total, past.total]).toEqual([2, 2, 2]);
    expect([first.items.length, second.items.length, past.items.length]).toEqual([1, 1, 0]);
    expect([first.items[0].id, second.items[0].id].sort()).toEqual([bobRunning.id, bobFailed.id].sort());
    expect(second).toMatchObject({ page: 2, page_size: 1 });

    const one = await data(stack, `/api/batch/${aliceDone.id}`);
    expect(one).toMatchObject({ ...ownerView(aliceDone), output_file_id: aliceDone.output_file_id, user_id: alice.id, username: alice.username });
    // A deleted user's ended batches go with it (test/files.e2e: its running ones are cancelled,
    // and stay listed under its id, with no name, until their retention).
    const carol = await tenant(stack);
    const carols = await settled(carol.openai, (await submit(carol.openai, [line(model, 0)])).id);
    await data(stack, `/api/user/${carol.id}`, stack.adminToken, 'DELETE');
    expect((await stack.admin('GET', `/api/batch/${carols.id}`)).status).toBe(404);

    const missing = await stack.admin('GET', '/api/batch/batch_does_not_exist');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ success: false, message: expect.stringContaining('batch_does_not_exist') });
  });

  it("turns away a common user's access token (403) and API key (401), and changes nothing for them", async ({ stack, upstream, channel }) => {
    const owner = await tenant(stack);
    const running = await stuckBatch(upstream, channel, owner.openai);
    const common = await tenant(stack);
    for (const [method, path] of [['GET', '/api/batch/'], ['GET', `/api/batch/${running.id}`], ['POST', `/api/batch/${running.id}/cancel`]]) {
      const asUser = await stack.admin(method!, path!, undefined, common.accessToken);
      expect(asUser.status, `${method} ${path}`).toBe(403);
      expect(asUser.body).toEqual({ success: false, message: expect.any(String) });
      expect((await stack.admin(method!, path!, undefined, common.key)).status).toBe(401);
      expect((await fetch(stack.gateway.url + path, { method })).status).toBe(401);
    }
    expect((await owner.openai.batches.retrieve(running.id)).status).toBe('in_progress');
  });

  it("lets an administrator cancel another user's batch, as its owner's cancel would", async ({ stack, upstream, channel }) => {
    const ops = await tenant(stack, 10);
    const owner = await tenant(stack);
    const running = await stuckBatch(upstream, channel, owner.openai);
    const cancelled = await data(stack, `/api/batch/${running.id}/cancel`, ops.accessToken, 'POST');
    expect(cancelled).toMatchObject({ id: running.id, status: 'cancelling', user_id: owner.id, username: owner.username });
    expect(cancelled.cancelling_at).toBeGreaterThan(0);
    expect((await owner.openai.batches.retrieve(running.id)).status).toMatch(/^(cancelling|cancelled)$/);
    // A batch already ending is returned as it is, as OpenAI's cancel does.
    expect((await data(stack, `/api/batch/${running.id}/cancel`, ops.accessToken, 'POST')).status).toMatch(/^(cancelling|cancelled)$/);
    expect((await stack.admin('POST', '/api/batch/batch_does_not_exist/cancel', undefined, ops.accessToken)).status).toBe(404);
    // The stuck lines end once the mock upstream is closed; the batch then ends cancelled.
  });
});

describe('the dashboard\'s batch page', () => {
  /** The dashboard's sign-in form, posted from its own page: the session cookie it sets, if any. */
  const signIn = async (stack: Stack, username: string) => {
    const response = await fetch(`${stack.gateway.url}/admin/queues/login`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: stack.gateway.url },
      body: new URLSearchParams({ username, password: `${username}-password` }),
    });
    const session = /gw_dashboard=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')?.[1];
    return { status: response.status, cookie: session && `gw_dashboard=${session}` };
  };
  const page = (stack: Stack, path: string, headers: Record<string, string>) => fetch(`${stack.gateway.url}/admin/queues/batches${path}`, { headers: { accept: 'text/html', ...headers } });
  const cells = (html: string, id: string) => {
    const row = new RegExp(`<tr data-batch="${id}">([\\s\\S]*?)</tr>`).exec(html)?.[1];
    expect(row, `a row for ${id}`).toBeDefined();
    return [...row!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1]!);
  };

  it("shows a signed-in administrator each running batch's owner, status and counts, escaping what its owner wrote", async ({ stack, upstream, channel }) => {
    const ops = await tenant(stack, 10);
    const owner = await tenant(stack);
    const running = await stuckBatch(upstream, channel, owner.openai, { note: '<script>x</script>', 'say"hi': "it's & <b>" });
    const done = await settled(owner.openai, (await submit(owner.openai, [line(`fast-${seq}`, 0)])).id);

    const { status: signedIn, cookie } = await signIn(stack, ops.username);
    expect(signedIn).toBe(303);
    const response = await page(stack, '', { cookie: cookie! });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const html = await response.text();
    expect(html).toMatch(/<meta http-equiv="refresh" content="\d+">/);
    const [id, user, status, progress, total, completed, failed, created, metadata] = cells(html, running.id);
    expect(id).toContain(running.id);
    expect(user).toContain(owner.username);
    expect(user).toContain(`#${owner.id}`);
    expect([status, total, completed, failed]).toEqual(['in_progress', '5', '3', '0']);
    expect(progress).toContain('60%');
    expect(created).toContain(new Date(running.created_at * 1000).toISOString().slice(0, 10));
    expect(metadata).toContain('note=&#60;script&#62;x&#60;/script&#62;');
    expect(metadata).toContain('say&#34;hi=it&#39;s &#38; &#60;b&#62;');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<b>');
    // Running batches by default; all of them on asking.
    expect(html).not.toContain(done.id);
    const everything = await (await page(stack, '?show=all', { cookie: cookie! })).text();
    expect(cells(everything, done.id)[2]).toBe('completed');
    // The board links to the page.
    expect(await (await fetch(`${stack.gateway.url}/admin/queues`, { headers: { cookie: cookie! } })).text()).toContain('/admin/queues/batches');
  });

  it('is refused without a session (the sign-in form, nothing of the batches) and to a common user', async ({ stack, upstream, channel }) => {
    const owner = await tenant(stack);
    const running = await stuckBatch(upstream, channel, owner.openai);
    for (const headers of [{}, { cookie: 'gw_dashboard=' + 'A'.repeat(43) }, { authorization: `Bearer ${owner.key}` }] as Record<string, string>[]) {
      const response = await page(stack, '', headers);
      expect(response.status, JSON.stringify(headers)).toBe(401);
      const html = await response.text();
      expect(html).toContain('Sign in');
      expect(html).not.toContain(running.id);
    }
    // A common user gets no session at all, and its access token is turned away.
    const common = await tenant(stack);
    expect(await signIn(stack, common.username)).toEqual({ status: 403, cookie: undefined });
    const refused = await page(stack, '', { authorization: `Bearer ${common.accessToken}` });
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain(running.id);
  });
});
