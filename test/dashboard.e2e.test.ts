/**
 * The queue dashboard in a real headless browser (Chromium driven by playwright-core; see
 * testkit's findChromium for where the browser comes from):
 * only administrators get in, nothing of the board leaks to anyone else, and only root may
 * change jobs.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { chromium, type Browser } from 'playwright-core';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { CHROMIUM_ARGS, findChromium, repoRoot, startStack, type Stack } from '@gateway/testkit';

const ROOT_PASSWORD = 'root-password-for-tests';
let stack: Stack;
let adminToken: string;
let commonToken: string;

async function login(username: string, password: string): Promise<string> {
  const response = await fetch(stack.gateway.url + '/api/user/login', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }),
  });
  return ((await response.json()) as any).data.access_token;
}

beforeAll(async () => {
  stack = await startStack({ env: { ADMIN_PASSWORD: ROOT_PASSWORD } });
  await stack.admin('POST', '/api/user/', { username: 'ops', password: 'ops-password', role: 10 });
  await stack.admin('POST', '/api/user/', { username: 'user', password: 'user-password' });
  adminToken = await login('ops', 'ops-password');
  commonToken = await login('user', 'user-password');
  // Jobs for the board to show: no audio worker runs, so they wait.
  const audio = new Queue(QueueName.audio, { connection: { url: stack.redis.url }, prefix: QUEUE_PREFIX });
  for (let i = 0; i < 5; i++) {
    await audio.add(QueueName.audio, { requestId: `demo-${i}`, replyTo: 'nobody', deadline: Date.now() + 600_000, payload: { model: 'gemini-tts', body: { contents: [{ parts: [{ text: `hello ${i}` }] }] } } });
  }
  await audio.close();
});
afterAll(async () => {
  await stack?.stop();
});

describe('who may open the dashboard', () => {
  it('gives anyone not signed in a 401 and the sign-in form, never the board or its static files', async () => {
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

  it('turns a common user away with 403', async () => {
    const response = await fetch(stack.gateway.url + '/admin/queues/api/queues', { headers: { authorization: `Bearer ${commonToken}` } });
    expect(response.status).toBe(403);
  });

  it('lets an administrator look but not change jobs; root may', async () => {
    const look = await fetch(stack.gateway.url + '/admin/queues/api/queues', { headers: { authorization: `Bearer ${adminToken}` } });
    expect(look.status).toBe(200);
    const queues = ((await look.json()) as any).queues.map((q: any) => q.name);
    expect(queues).toEqual(expect.arrayContaining(['completion', 'audio', 'admin']));

    const pauseAsAdmin = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/pause', { method: 'PUT', headers: { authorization: `Bearer ${adminToken}` } });
    expect(pauseAsAdmin.status).toBe(403);
    const pauseAsRoot = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/pause', { method: 'PUT', headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(pauseAsRoot.status).toBe(200);
    const resume = await fetch(stack.gateway.url + '/admin/queues/api/queues/audio/resume', { method: 'PUT', headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(resume.status).toBe(200);
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

  it('signs root in with the form and shows the queues with their jobs', async () => {
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
});
