/**
 * The queue dashboard in a real headless browser (Chromium driven by playwright-core; see
 * testkit's findChromium for where the browser comes from):
 * only administrators get in, nothing of the board leaks to anyone else, and only root may
 * change jobs.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { chromium, type Browser } from 'playwright-core';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { KEPT_COMPLETED } from '@gateway/queue';
import { CHROMIUM_ARGS, findChromium, repoRoot, type Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const ROOT_PASSWORD = 'root-password-for-tests';
// Every job kept on the board once finished (one in 10 by default), so the test's few are all there.
const it = stackTest({ env: { ADMIN_PASSWORD: ROOT_PASSWORD, QUEUE_BOARD_KEEP_ONE_IN: '1' } });
let adminToken: string;
let commonToken: string;

async function login(stack: Stack, username: string, password: string): Promise<string> {
  const response = await fetch(stack.gateway.url + '/api/user/login', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }),
  });
  return ((await response.json()) as any).data.access_token;
}

it.beforeAll(async ({ stack }) => {
  await stack.admin('POST', '/api/user/', { username: 'ops', password: 'ops-password', role: 10 });
  await stack.admin('POST', '/api/user/', { username: 'user', password: 'user-password' });
  adminToken = await login(stack, 'ops', 'ops-password');
  commonToken = await login(stack, 'user', 'user-password');
  // Jobs for the board to show: no audio worker runs, so they wait.
  const audio = new Queue(QueueName.audio, { connection: { url: stack.redis.url }, prefix: QUEUE_PREFIX });
  for (let i = 0; i < 5; i++) {
    await audio.add(QueueName.audio, { requestId: `demo-${i}`, replyTo: 'nobody', deadline: Date.now() + 600_000, payload: { model: 'gemini-tts', body: { contents: [{ parts: [{ text: `hello ${i}` }] }] } } });
  }
  await audio.close();
});

describe('who may open the dashboard', () => {
  it('gives anyone not signed in a 401 and the sign-in form, never the board or its static files', async ({ stack }) => {
    const page = await fetch(stack.gateway.url + '/admin/queues', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(401);
    const html = await page.text();
    expect(html).toContain('Sign in');
    expect(html).not.toContain('static/');

    const board = await (await fetch(stack.gateway.url + '/admin/queues', { headers: { authorization: `Bearer ${adminToken}` } })).text();
    const script = /src="(static\/js\/main[^"]+\.js)"/.exec(board)?.[1];
    expect(script).toBeDefined();
    const asset = `/admin/queues/${script}`;
    expect((await fetch(stack.gateway.url + asset!, { headers: { authorization: `Bearer ${adminToken}` } })).status).toBe(200);
    expect((await fetch(stack.gateway.url + asset!)).status).toBe(401);
    expect((await fetch(stack.gateway.url + '/admin/queues/api/queues')).status).toBe(401);
  });

  it('turns a common user away with 403', async ({ stack }) => {
    const response = await fetch(stack.gateway.url + '/admin/queues/api/queues', { headers: { authorization: `Bearer ${commonToken}` } });
    expect(response.status).toBe(403);
  });

  it('lets an administrator look but not change jobs; root may', async ({ stack }) => {
    const look = await fetch(stack.gateway.url + '/admin/queues/api/queues', { headers: { authorization: `Bearer ${adminToken}` } });
    expect(look.status).toBe(200);
    const queues = ((await look.json()) as any).queues.map((q: any) => q.name);
    expect(queues).toEqual(expect.arrayContaining(['completion', 'audio']));
    // The admin queue's jobs name users, roles and limits: root's only.
    expect(queues).not.toContain('admin');
    const asRoot = await fetch(stack.gateway.url + '/admin/queues/api/queues', { headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(((await asRoot.json()) as any).queues.map((q: any) => q.name)).toContain('admin');

    const pauseAsAdmin = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/pause', { method: 'PUT', headers: { authorization: `Bearer ${adminToken}` } });
    expect(pauseAsAdmin.status).toBe(403);
    const pauseAsRoot = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/pause', { method: 'PUT', headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(pauseAsRoot.status).toBe(200);
    const resume = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/resume', { method: 'PUT', headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(resume.status).toBe(200);
  });
});

describe('what the board shows of jobs', () => {
  const board = (stack: Stack, path: string, token: string) => fetch(stack.gateway.url + '/admin/queues/api' + path, { headers: { authorization: `Bearer ${token}` } });
  const waitingAdminJobs = async (stack: Stack, token: string) =>
    (await (await board(stack, '/queues?activeQueue=admin&status=waiting&page=1&jobsPerPage=50', token)).json() as any).queues.find((q: any) => q.name === 'admin');

  it('never shows a hash, digest or encrypted key, and shows the admin queue to root only, while the admin worker is down', async ({ stack }) => {
    const user = await stack.adminData('POST', '/api/user/', { username: 'victim', password: 'victim-password-1' });
    const adminWorker = stack.services.find((s) => s.name === 'admin-worker')!;
    await adminWorker.stop('SIGKILL');
    // Three management jobs that carry something made from a secret: a new password's hash,
    // a new API key's digest, a channel key encrypted under SECRET_KEY. They wait in the queue.
    const pending = [
      stack.admin('PUT', '/api/user/', { id: user.id, password: 'new-victim-password' }),
      stack.admin('POST', '/api/token/', { name: 'digest-shown?' }),
      stack.admin('POST', '/api/channel/', { name: 'ch', type: 'openai', key: 'sk-upstream-secret-key-123456', base_url: 'http://example.com', models: ['m'] }),
    ];
    try {
      await expect.poll(async () => (await waitingAdminJobs(stack, stack.adminToken))?.jobs.length ?? 0, { timeout: 10_000 }).toBe(3);
      const asRoot = JSON.stringify(await waitingAdminJobs(stack, stack.adminToken));
      expect(asRoot).toContain('digest-shown?'); // root sees the jobs and their data…
      expect(asRoot).toContain('[redacted]');
      expect(asRoot).not.toMatch(/scrypt\$|enc:v1|[0-9a-f]{64}|sk-upstream|sk-up\*/); // …but nothing made from a secret

      // An administrator below root sees no admin queue at all, nor any of its jobs by id.
      expect(await waitingAdminJobs(stack, adminToken)).toBeUndefined();
      const anyJob = JSON.parse(asRoot).jobs[0].id;
      expect((await board(stack, `/queues/admin/${anyJob}`, adminToken)).status).toBe(404);
      expect((await board(stack, `/queues/admin/${anyJob}`, stack.adminToken)).status).toBe(200);
    } finally {
      await stack.add('admin-worker');
      await Promise.all(pending);
    }
  }, 30_000);

  it('cuts a prompt sent as many short strings within one budget per job', async ({ stack }) => {
    const completion = new Queue(QueueName.completion, { connection: { url: stack.redis.url }, prefix: QUEUE_PREFIX });
    const prompt = Array.from({ length: 28 }, (_, i) => `part-${String(i).padStart(2, '0')} ${'word '.repeat(8)}`);
    const tokens = Array.from({ length: 2000 }, (_, i) => 1000 + i);
    await completion.add(QueueName.completion, { requestId: 'split-prompt', replyTo: 'nobody', deadline: Date.now() + 600_000, payload: { model: 'm', body: { prompt } } });
    await completion.add(QueueName.completion, { requestId: 'token-prompt', replyTo: 'nobody', deadline: Date.now() + 600_000, payload: { model: 'm', body: { prompt: tokens } } });
    await completion.close();
    const queue = (await (await board(stack, '/queues?activeQueue=completion&status=waiting&page=1&jobsPerPage=50', adminToken)).json() as any).queues.find((q: any) => q.name === 'completion');
    const split = JSON.stringify(queue.jobs.find((j: any) => j.data.requestId === 'split-prompt').data);
    expect(split).toContain('part-00');
    expect(split).not.toContain('part-27');
    const ids = JSON.stringify(queue.jobs.find((j: any) => j.data.requestId === 'token-prompt').data);
    expect(ids).not.toContain('2999');
    expect(ids.length).toBeLessThan(1000);
  });
});

describe('jobs already finished', () => {
  const PROMPT = `board-prompt ${'private words '.repeat(300)}`;

  it('lists the jobs of requests already answered, a recent few, kept in Redis without their payloads', async ({ stack, upstream, channel, apiKey }) => {
    const worker = await stack.add('completion-worker');
    try {
      const mock = await upstream.openai({ text: 'fine' });
      await channel(mock, ['board-model']);
      const { key } = await apiKey();
      for (let i = 0; i < 5; i++) {
        const answer = await fetch(`${stack.gateway.url}/v1/completions`, {
          method: 'POST', body: JSON.stringify({ model: 'board-model', prompt: PROMPT }),
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': `board-${i}` },
        });
        expect(answer.status).toBe(200);
      }
      // After the fact, the board lists them as completed (a job is marked done just after its reply goes out).
      const completed = async () => ((await (await fetch(`${stack.gateway.url}/admin/queues/api/queues?activeQueue=completion&status=completed&page=1&jobsPerPage=50`, {
        headers: { authorization: `Bearer ${adminToken}` },
      })).json()) as any).queues.find((q: any) => q.name === 'completion');
      await expect.poll(async () => (await completed()).jobs.map((j: any) => j.data.requestId), { timeout: 10_000 })
        .toEqual(expect.arrayContaining(['board-0', 'board-1', 'board-2', 'board-3', 'board-4']));
      // A job is made small once it has completed (its lane's 'completed' event), a moment after.
      await expect.poll(async () => (await completed()).jobs.find((j: any) => j.data.requestId === 'board-0').data.payload, { timeout: 10_000 })
        .toEqual({ operation: 'completions', model: 'board-model' });
      const job = (await completed()).jobs.find((j: any) => j.data.requestId === 'board-0');
      // Bounded: BullMQ trims the set by count and age as each job ends.
      expect(job.opts.removeOnComplete).toEqual(KEPT_COMPLETED);

      // In Redis itself (the board redacts, Redis does not): no kept job holds a prompt, a reply
      // address, a hold, or anything made from a secret (the management jobs of the tests before).
      const redis = new Redis(stack.redis.url);
      try {
        // Every kept job, once made small after its completion (polled: that step follows it).
        const kept = async () => {
          const datas: string[] = [];
          for (const queue of [QueueName.completion, QueueName.admin]) {
            for (const id of await redis.zrange(`${QUEUE_PREFIX}:${queue}:completed`, 0, -1)) datas.push((await redis.hget(`${QUEUE_PREFIX}:${queue}:${id}`, 'data'))!);
          }
          return datas;
        };
        // Polled as a whole: a job of a test before may reach the completed set only now, on a
        // loaded machine, and is made small a moment after. One that stays whole fails here.
        const whole = /private words|replyTo|hold|scrypt\$|enc:v1|[0-9a-f]{64}|sk-upstream/;
        await expect.poll(async () => (await kept()).filter((data) => data.length >= 400 || whole.test(data)), { timeout: 10_000 }).toEqual([]);
        expect((await kept()).length).toBeGreaterThanOrEqual(8);
      } finally {
        redis.disconnect();
      }
    } finally {
      await worker.stop();
    }
  }, 60_000);
});

describe('cross-site requests and the cookie', () => {
  const signIn = (gateway: string, headers: Record<string, string>) =>
    fetch(`${gateway}/admin/queues/login`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ username: 'root', password: ROOT_PASSWORD }),
    });
  const sessionOf = (response: Response) => /gw_dashboard=([^;]+)/.exec(response.headers.get('set-cookie') ?? '')?.[1];

  it('refuses a sign-in posted from another site, or with no Origin at all (login CSRF)', async ({ stack }) => {
    for (const headers of [{ origin: 'https://evil.example' }, { referer: 'https://evil.example/page' }, { origin: 'null' }, {}] as Record<string, string>[]) {
      const response = await signIn(stack.gateway.url, headers);
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(sessionOf(response)).toBeUndefined();
    }
    const sameOrigin = await signIn(stack.gateway.url, { origin: stack.gateway.url });
    expect(sameOrigin.status).toBe(303);
    expect(sessionOf(sameOrigin)).toBeDefined();
    // A Referer from the sign-in page does as well as an Origin.
    expect((await signIn(stack.gateway.url, { referer: `${stack.gateway.url}/admin/queues/login` })).status).toBe(303);
  });

  it("refuses a change to jobs sent with the browser's cookie from another site; same-origin and token requests pass", async ({ stack }) => {
    const session = sessionOf(await signIn(stack.gateway.url, { origin: stack.gateway.url }))!;
    const pause = (headers: Record<string, string>) => fetch(`${stack.gateway.url}/admin/queues/api/queues/audio/pause`, { method: 'PUT', headers });
    const resume = (headers: Record<string, string>) => fetch(`${stack.gateway.url}/admin/queues/api/queues/audio/resume`, { method: 'PUT', headers });
    const cookie = `gw_dashboard=${session}`;
    expect((await pause({ cookie, origin: 'https://evil.example' })).status).toBe(403);
    expect((await pause({ cookie })).status).toBe(403);
    // The same host and port under a scheme no page of the dashboard has.
    const { host } = new URL(stack.gateway.url);
    for (const origin of [`ws://${host}`, `chrome-extension://${host}`, `ftp://${host}`]) expect((await pause({ cookie, origin })).status, origin).toBe(403);
    expect((await pause({ cookie, origin: stack.gateway.url })).status).toBe(200);
    expect((await resume({ cookie, referer: `${stack.gateway.url}/admin/queues/queue/audio` })).status).toBe(200);
    // Reading needs no Origin; an access token is no ambient credential, so needs none either.
    expect((await fetch(`${stack.gateway.url}/admin/queues/api/queues`, { headers: { cookie } })).status).toBe(200);
    expect((await pause({ authorization: `Bearer ${stack.adminToken}` })).status).toBe(200);
    expect((await resume({ authorization: `Bearer ${stack.adminToken}` })).status).toBe(200);
    // Signing out from another site is refused too.
    const logout = await fetch(`${stack.gateway.url}/admin/queues/logout`, { method: 'POST', redirect: 'manual', headers: { cookie, origin: 'https://evil.example' } });
    expect(logout.status).toBe(403);
  });

  it('marks the cookie Secure behind a TLS proxy only when TRUST_PROXY trusts it', async ({ stack }) => {
    const behindTls = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'gateway.example', origin: 'https://gateway.example' };
    // Not trusted (the default): X-Forwarded-* are anyone's to send, so they change nothing.
    const untrusted = await signIn(stack.gateway.url, { ...behindTls, origin: stack.gateway.url });
    expect(untrusted.status).toBe(303);
    expect(untrusted.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);

    const proxied = await stack.add('gateway', { TRUST_PROXY: '127.0.0.1' });
    try {
      const trusted = await signIn(proxied.url, behindTls);
      expect(trusted.status).toBe(303);
      expect(trusted.headers.get('set-cookie')).toMatch(/;\s*Secure/i);
      // Over plain HTTP through the same proxy: no Secure (the browser would drop the cookie).
      const plain = await signIn(proxied.url, { origin: proxied.url });
      expect(plain.headers.get('set-cookie')).not.toMatch(/;\s*Secure/i);
      // The proxy's X-Forwarded-Host is the host the browser saw: another Origin is still refused,
      // and so is a plain-HTTP page of the same host (login CSRF from http:// onto https://).
      expect((await signIn(proxied.url, { ...behindTls, origin: 'https://evil.example' })).status).toBe(403);
      const fromPlainHttp = await signIn(proxied.url, { ...behindTls, origin: 'http://gateway.example' });
      expect(fromPlainHttp.status).toBe(403);
      // A scheme from the proxy in capitals is read as it is meant; one no page has (or a name
      // every object has) is a 403, not a 500.
      const capitals = await signIn(proxied.url, { ...behindTls, 'x-forwarded-proto': 'HTTPS' });
      expect(capitals.status).toBe(303);
      // And its cookie is as Secure as with the scheme in small letters.
      expect(capitals.headers.get('set-cookie')).toMatch(/;\s*Secure/i);
      for (const proto of ['constructor', '__proto__', 'wss']) expect((await signIn(proxied.url, { ...behindTls, 'x-forwarded-proto': proto })).status, proto).toBe(403);
      expect(sessionOf(fromPlainHttp)).toBeUndefined();
    } finally {
      await proxied.stop();
    }
  });
});

describe('in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    const { executablePath } = await findChromium();
    browser = await chromium.launch({ executablePath, args: [...CHROMIUM_ARGS] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('signs root in with the form and shows the queues with their jobs', async ({ stack }) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const first = await page.goto(stack.gateway.url + '/admin/queues');
    expect(first?.status()).toBe(401);

    await page.fill('#username', 'root');
    await page.fill('#password', 'not-the-password');
    await page.click('button[type=submit]');
    await expect(page.locator('[role=alert]').textContent()).resolves.toMatch(/invalid username or password/);

    await page.fill('#username', 'root');
    await page.fill('#password', ROOT_PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/admin\/queues$/);
    await page.getByText('audio', { exact: false }).first().waitFor();
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'gw_dashboard')).toMatchObject({ httpOnly: true });

    await page.goto(stack.gateway.url + '/admin/queues/queue/audio?status=waiting');
    // Every one of the five waiting jobs is on the page, with its request id (not only the first).
    for (let i = 0; i < 5; i++) await page.getByText(`demo-${i}`, { exact: false }).first().waitFor({ timeout: 15_000 });
    const text = (await page.textContent('body')) ?? '';
    expect(new Set(text.match(/demo-\d/g))).toEqual(new Set(['demo-0', 'demo-1', 'demo-2', 'demo-3', 'demo-4']));
    expect(text).toMatch(/Waiting/i);
    // docs/dashboard.png is this page; it is rewritten only when asked (UPDATE_DOCS=1), so a test
    // run leaves the working tree clean.
    if (process.env.UPDATE_DOCS === '1') await page.screenshot({ path: join(repoRoot, 'docs', 'dashboard.png') });
    await context.close();
  });

  it('shows the jobs already finished, and fetches nothing from another origin', async ({ stack }) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const elsewhere: string[] = [];
    const refused: string[] = [];
    page.on('request', (request) => { if (new URL(request.url()).origin !== stack.gateway.url) elsewhere.push(request.url()); });
    page.on('console', (message) => { if (/Content Security Policy/i.test(message.text())) refused.push(message.text()); });
    await page.goto(stack.gateway.url + '/admin/queues');
    await page.fill('#username', 'root');
    await page.fill('#password', ROOT_PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/admin\/queues$/);
    const board = await page.goto(stack.gateway.url + '/admin/queues/queue/completion?status=completed');
    // The requests of the test before, answered and gone from every live state, are listed.
    await page.getByText('board-0', { exact: false }).first().waitFor({ timeout: 15_000 });
    // A finished job's own page too, its data shown as kept.
    const id = await page.evaluate(async () => ((await (await fetch('/admin/queues/api/queues?activeQueue=completion&status=completed&page=1&jobsPerPage=10')).json()) as any)
      .queues.find((q: any) => q.name === 'completion').jobs.find((j: any) => j.data.requestId === 'board-0').id);
    await page.goto(`${stack.gateway.url}/admin/queues/queue/completion/${id}`);
    await page.getByText('board-model', { exact: false }).first().waitFor({ timeout: 15_000 });
    expect(elsewhere).toEqual([]);
    expect(board?.headers()['content-security-policy']).toMatch(/default-src 'none'/);
    expect(refused).toEqual([]);
    await context.close();
  });
});
