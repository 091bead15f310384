/**
 * The operations console (/admin) in a real headless Chromium, against real gateway and worker
 * processes, Redis, PostgreSQL and mock upstreams: an administrator signs in and sees a channel
 * fill to its max_concurrency and cool down, disables a tag and sees the routing follow, finds a
 * failed request by its id and reads why it failed; a common user is refused. With UPDATE_DOCS=1
 * it writes the screenshots in docs/console/.
 */
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import OpenAI from 'openai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, findChromium, repoRoot, type Stack } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const ROOT_PASSWORD = 'root-password-for-console';
const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { ADMIN_PASSWORD: ROOT_PASSWORD, CHANNEL_FAILURES_BEFORE_COOLDOWN: '2', CHANNEL_COOLDOWN_MS: '60000' },
});

/**
 * Chromium under a system locale of its own: it reports navigator.language from LANG, and no
 * locale is forced on its pages. Under LANG=C.UTF-8 that is `en-US@posix`, a tag Intl refuses.
 */
async function browserUnder(lang: string): Promise<Browser> {
  const { executablePath } = await findChromium();
  const env = Object.fromEntries(Object.entries(process.env).filter(([name, value]) => value !== undefined && !/^(LANG|LANGUAGE|LC_.*)$/.test(name))) as Record<string, string>;
  return chromium.launch({ executablePath, args: [...CHROMIUM_ARGS], env: { ...env, LANG: lang } });
}

let browser: Browser;
beforeAll(async () => {
  browser = await browserUnder('C.UTF-8');
});
afterAll(async () => {
  await browser?.close();
});

const SHOTS = join(repoRoot, 'docs', 'console');
/** docs/console/<name>.png, rewritten only when asked (UPDATE_DOCS=1), so a test run leaves the tree clean. */
async function screenshot(page: Page, name: string) {
  if (process.env.UPDATE_DOCS !== '1') return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function signedIn(stack: Stack, username = 'root', password = ROOT_PASSWORD, under = browser): Promise<{ context: BrowserContext; page: Page }> {
  // No locale forced: the page gets whatever tag the browser reports.
  const context = await under.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const first = await page.goto(stack.gateway.url + '/admin');
  expect(first?.status()).toBe(401);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.click('button[type=submit]');
  return { context, page };
}

const client = (stack: Stack, key: string, requestId?: string) => new OpenAI({
  baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000,
  ...(requestId ? { defaultHeaders: { 'x-request-id': requestId } } : {}),
});

/** A port nothing listens on: a channel pointing there fails with ECONNREFUSED. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the operations console', () => {
  it('refuses anyone not signed in, and a common user, by form, token or call', async ({ stack }) => {
    const page = await fetch(stack.gateway.url + '/admin', { headers: { accept: 'text/html' } });
    expect(page.status).toBe(401);
    expect(await page.text()).toContain('Sign in');
    expect((await fetch(stack.gateway.url + '/admin/api/overview')).status).toBe(401);
    expect((await fetch(stack.gateway.url + '/admin/assets/console.js')).status).toBe(401);

    await stack.admin('POST', '/api/user/', { username: 'plain', password: 'plain-password' });
    const login = await stack.admin('POST', '/api/user/login', { username: 'plain', password: 'plain-password' });
    const plainToken = login.body.data.access_token;
    expect((await fetch(stack.gateway.url + '/admin/api/overview', { headers: { authorization: `Bearer ${plainToken}` } })).status).toBe(403);
    const change = await fetch(stack.gateway.url + '/admin/api/channel/tag/disabled', {
      method: 'POST', headers: { authorization: `Bearer ${plainToken}`, 'content-type': 'application/json' }, body: '{"tag":"any"}',
    });
    expect(change.status).toBe(403);

    const { context, page: browserPage } = await signedIn(stack, 'plain', 'plain-password');
    await expect(browserPage.locator('[role=alert]').textContent()).resolves.toMatch(/only administrators may sign in to the operations console/);
    expect(await browserPage.locator('#channels').count()).toBe(0);
    await context.close();

    // An administrator's access token opens the calls, as the management API's does.
    const overview = await fetch(stack.gateway.url + '/admin/api/overview', { headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(overview.status).toBe(200);
    const completion = ((await overview.json()) as any).data.queues.find((q: any) => q.queue === 'completion');
    expect(completion.processes).toEqual([expect.objectContaining({ concurrency: expect.any(Number), lanes: expect.any(Number) })]);
    expect(completion.processes[0].concurrency).toBeGreaterThan(0);
  });

  it('shows a channel fill to its max_concurrency under a burst, then cool down after upstream failures', async ({ stack, upstream, channel, apiKey }) => {
    const slow = await upstream.openai({ delayMs: 2500 });
    const limited = await channel(slow, ['console-burst'], { name: 'limited', max_concurrency: 2, tag: 'burst' });
    const { key } = await apiKey();
    const { context, page } = await signedIn(stack);
    await page.waitForURL(/\/admin$/);
    const row = page.locator(`tr[data-channel="${limited.id}"]`);
    await expect(row.locator('.state').textContent()).resolves.toContain('enabled');

    const openai = client(stack, key);
    const burst = Array.from({ length: 6 }, () => openai.completions.create({ model: 'console-burst', prompt: 'hi' }).then(() => 'ok', (e) => `failed ${e.status}`));
    await row.locator('.slots', { hasText: '2 / 2' }).waitFor({ timeout: 15_000 });
    expect(await row.locator('.meter.full').count()).toBe(1);
    expect(slow.maxInFlight).toBeLessThanOrEqual(2);
    await page.locator('tr[data-queue="completion"] .workers .process').first().waitFor();
    await screenshot(page, 'overview');

    // The upstream starts failing: two failures in a row, from two users, cool the channel down
    // (one user's alone would cool it for that user only).
    slow.setBehaviour({ status: 500 });
    const outcomes = await Promise.all(burst);
    expect(outcomes).toContain('ok');
    const user = await stack.adminData('POST', '/api/user/', { username: 'console-second', password: 'console-password' });
    const second = client(stack, (await stack.adminData('POST', '/api/token/', { name: 'second', user_id: user.id, unlimited_quota: true })).key);
    // (A success charged after the failures resets their count: fail until the channel cools down.)
    await expect.poll(async () => {
      await openai.completions.create({ model: 'console-burst', prompt: 'hi' }).catch(() => undefined);
      await second.completions.create({ model: 'console-burst', prompt: 'hi' }).catch(() => undefined);
      await page.waitForTimeout(500);
      return row.locator('.state').textContent();
    }, { timeout: 20_000 }).toMatch(/cooling down until \d/);
    // The calls of the last minutes, from the request log: the failures counted.
    await expect.poll(async () => Number(await row.locator('.errors').textContent()), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
    expect(Number(await row.locator('.calls').textContent())).toBeGreaterThanOrEqual(4);
    await context.close();
  }, 60_000);

  it('disables every channel of a tag, and the routing follows', async ({ stack, upstream, channel, apiKey }) => {
    const blue = await upstream.openai({ text: 'from blue' });
    const green = await upstream.openai({ text: 'from green' });
    const blueChannel = await channel(blue, ['console-tag'], { name: 'blue-1', tag: 'blue', priority: 10 });
    await channel(green, ['console-tag'], { name: 'green-1', tag: 'green', priority: 0 });
    const { key } = await apiKey();
    const openai = client(stack, key);
    expect((await openai.completions.create({ model: 'console-tag', prompt: 'hi' })).choices[0]!.text).toBe('from blue');

    const { context, page } = await signedIn(stack);
    await page.waitForURL(/\/admin$/);
    await page.fill('#tag', 'blue');
    await page.getByRole('button', { name: 'Disable tag' }).click();
    await page.locator('[role=status]', { hasText: 'Disable tag blue: done' }).waitFor();
    await page.locator(`tr[data-channel="${blueChannel.id}"] .state`, { hasText: 'disabled' }).waitFor();

    // The gateway routes the next request to the tag still enabled.
    await expect.poll(async () => (await openai.completions.create({ model: 'console-tag', prompt: 'hi' })).choices[0]!.text, { timeout: 10_000 }).toBe('from green');
    const blueCalls = blue.requests.length;
    expect((await openai.completions.create({ model: 'console-tag', prompt: 'hi' })).choices[0]!.text).toBe('from green');
    expect(blue.requests.length).toBe(blueCalls);

    // And back: enabled again from its row.
    await page.locator(`tr[data-channel="${blueChannel.id}"]`).getByRole('button', { name: 'Enable' }).click();
    await page.locator(`tr[data-channel="${blueChannel.id}"] .state`, { hasText: 'enabled' }).waitFor();
    await expect.poll(async () => (await openai.completions.create({ model: 'console-tag', prompt: 'hi' })).choices[0]!.text, { timeout: 10_000 }).toBe('from blue');
    await context.close();
  }, 60_000);

  it('finds a failed request by its request id, with every channel tried and why it was left', async ({ stack, upstream, channel, apiKey }) => {
    const failing = await upstream.openai({ status: 503, body: { error: { message: 'upstream overloaded', type: 'server_error' } } });
    const port = await closedPort();
    const refused = await stack.adminData('POST', '/api/channel/', { name: 'refused', type: 'openai', key: 'sk-refused', base_url: `http://127.0.0.1:${port}`, models: ['console-fail'], priority: 10 });
    const overloaded = await channel(failing, ['console-fail'], { name: 'overloaded', priority: 0 });
    const { key } = await apiKey({ name: 'console-key' });
    const requestId = `console-failed-${Date.now()}`;
    await expect(client(stack, key, requestId).completions.create({ model: 'console-fail', prompt: 'hi' })).rejects.toMatchObject({ status: expect.any(Number) });
    // Some successes around it, so the search has something to leave out.
    const good = await upstream.openai({ text: 'fine' });
    await channel(good, ['console-ok']);
    for (let i = 0; i < 3; i++) await client(stack, key).completions.create({ model: 'console-ok', prompt: 'hi' });

    const { context, page } = await signedIn(stack);
    await page.waitForURL(/\/admin$/);
    await page.getByRole('link', { name: 'Request log' }).click();
    await page.fill('input[name=request_id]', requestId);
    // The worker writes its row in batches, off the reply path: search until it is there.
    await expect.poll(async () => {
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForTimeout(300);
      return page.locator(`tr[data-request="${requestId}"]`).count();
    }, { timeout: 15_000 }).toBe(1);
    expect(await page.locator('tr.entry').count()).toBe(1);
    await page.locator(`tr[data-request="${requestId}"]`).click();
    const detail = page.locator('aside.entry-detail');
    await detail.waitFor();
    expect(Number(await detail.locator('[data-field=status]').textContent())).toBeGreaterThanOrEqual(500);
    await expect(detail.locator('[data-field=token_name]').textContent()).resolves.toBe('console-key');
    const attempts = await detail.locator('table.attempts tbody tr').allTextContents();
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toContain(String(refused.id));
    expect(attempts[0]).toContain('ECONNREFUSED');
    expect(attempts[0]).toContain(`127.0.0.1:${port}`);
    expect(attempts[1]).toContain(String(overloaded.id));
    expect(attempts[1]).toContain('503');
    await screenshot(page, 'request-log');

    // Failed only, for the whole log: the successes are left out.
    await page.fill('input[name=request_id]', '');
    await page.check('input[name=failed]');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator(`tr[data-request="${requestId}"]`).waitFor();
    const statuses = await page.locator('tr.entry .status').allTextContents();
    expect(statuses.every((s) => Number(s) >= 400)).toBe(true);

    // A refusal the gateway made itself (an unknown key) is in the log too, the key shown only
    // as its mask and a short hash.
    const refusedId = `console-refused-${Date.now()}`;
    const badKey = 'sk-console0123456789abcdefghijklmnop';
    const refusal = await fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', body: '{}', headers: { authorization: `Bearer ${badKey}`, 'content-type': 'application/json', 'x-request-id': refusedId },
    });
    expect(refusal.status).toBe(401);
    await page.fill('input[name=request_id]', refusedId);
    await expect.poll(async () => {
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForTimeout(300);
      return page.locator(`tr[data-request="${refusedId}"]`).count();
    }, { timeout: 15_000 }).toBe(1);
    await page.locator(`tr[data-request="${refusedId}"]`).click();
    await expect(detail.locator('[data-field=status]').textContent()).resolves.toBe('401');
    await expect(detail.locator('[data-field=error_code]').textContent()).resolves.toBe('invalid_api_key');
    await expect(detail.locator('[data-field=client_ip]').textContent()).resolves.toBe('127.0.0.1');
    await expect(detail.locator('[data-field=credential]').textContent()).resolves.toMatch(/^sk-\w{2}\*{8}\w{4}#[0-9a-f]{8}$/);
    expect(await page.content()).not.toContain(badKey.slice(6));

    await page.getByRole('link', { name: 'Charts' }).click();
    await page.locator('figure.chart figcaption', { hasText: 'Requests per minute' }).waitFor({ timeout: 15_000 });
    expect(await page.locator('figure.chart canvas').count()).toBeGreaterThanOrEqual(4);
    await page.locator('figure.chart figcaption', { hasText: 'Jobs waiting, live' }).waitFor({ timeout: 15_000 });
    await screenshot(page, 'charts');
    await context.close();
  }, 60_000);

  it("shows spend per key, user and model today and this month, the prices and where each came from, a model with no price as not priced, and each request's cost in the log", async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'priced' });
    const [priced, free] = [`console-priced-${Date.now()}`, `console-free-${Date.now()}`];
    await channel(mock, [priced, free]);
    expect((await stack.admin('PUT', '/api/price/', { model: priced, input: 250_000, output: 500_000 })).status).toBe(200);
    const { id, key } = await apiKey({ name: 'spender' });
    // The workers hear of the price on the change feed: asked until a request is priced.
    let usage!: OpenAI.CompletionUsage;
    let requestId = '';
    await expect.poll(async () => {
      requestId = `console-cost-${Date.now()}`;
      usage = (await client(stack, key, requestId).completions.create({ model: priced, prompt: 'what does it cost' })).usage!;
      return (await loggedRow(stack, requestId)).priced;
    }, { timeout: 15_000, interval: 200 }).toBe(true);
    const freeId = `console-free-${Date.now()}`;
    await client(stack, key, freeId).completions.create({ model: free, prompt: 'hi' });
    await loggedRow(stack, freeId);
    // $250,000 and $500,000 per million tokens: a dollar or more, shown in cents.
    const cost = (usage.prompt_tokens * 250_000 + usage.completion_tokens * 500_000) / 1e6;
    const shown = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(cost);

    const { context, page } = await signedIn(stack);
    await page.waitForURL(/\/admin$/);
    await page.getByRole('link', { name: 'Request log' }).click();
    await page.fill('input[name=request_id]', requestId);
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.locator(`tr[data-request="${requestId}"] .cost`).textContent({ timeout: 15_000 })).resolves.toBe(shown);
    await page.fill('input[name=request_id]', freeId);
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.locator(`tr[data-request="${freeId}"] .cost`).textContent({ timeout: 15_000 })).resolves.toBe('not priced');

    await page.getByRole('link', { name: 'Spend' }).click();
    // The spend is read at most every 10 s for every console: refreshed until it counts the request.
    await expect.poll(async () => {
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForTimeout(500);
      return page.locator(`#spend-keys tr[data-key="${id}"] .day`).textContent({ timeout: 5_000 }).catch(() => null);
    }, { timeout: 30_000 }).toBe(shown);
    await expect(page.locator(`#spend-keys tr[data-key="${id}"] th`).textContent()).resolves.toBe(`spender (#${id})`);
    await expect(page.locator(`#spend-models tr[data-key="${free}"] .unpriced`).textContent()).resolves.toBe('1');
    await expect(page.locator(`#price-table tr[data-model="${priced}"] .source`).textContent()).resolves.toBe('set');
    await expect(page.locator('#price-table tr[data-model="gpt-4o"] .source').textContent()).resolves.toBe('default table');
    await expect(page.locator(`#price-table tr.not-priced[data-model="${free}"]`).textContent()).resolves.toContain('not priced');
    await screenshot(page, 'spend');
    await context.close();
  }, 60_000);

  it('shows the data whatever language tag the browser reports, and finished jobs a second falling to 0 once the queue is idle', async ({ stack, upstream, channel, apiKey }) => {
    const fast = await upstream.openai({ text: 'quick' });
    await channel(fast, ['console-idle']);
    const { key } = await apiKey();
    const euro = await browserUnder('de_DE.UTF-8@euro'); // reported as de-DE@euro, refused by Intl too
    try {
      const { context, page } = await signedIn(stack, 'root', ROOT_PASSWORD, euro);
      await page.waitForURL(/\/admin$/);
      const drain = page.locator('tr[data-queue="completion"] .drain');
      await drain.waitFor({ timeout: 15_000 });
      await expect(page.locator('#console').textContent()).resolves.not.toContain('Loading…');
      // Libraries that read the browser's language read a tag Intl accepts.
      expect(await page.evaluate(() => navigator.language)).toBe('de-DE');

      // A burst of requests: the rate shows; then nothing finishes and it falls to 0.
      const openai = client(stack, key);
      await expect.poll(async () => {
        await Promise.all(Array.from({ length: 10 }, () => openai.completions.create({ model: 'console-idle', prompt: 'hi' })));
        return Number(await drain.textContent());
      }, { timeout: 20_000 }).toBeGreaterThan(0);
      await expect.poll(async () => drain.textContent(), { timeout: 30_000 }).toBe('0.0');
      // The live chart's series say the same: its last point is 0.
      await page.getByRole('link', { name: 'Charts' }).click();
      await page.locator('figure.chart figcaption', { hasText: 'Jobs finished per second, live' }).waitFor({ timeout: 15_000 });
      const last = await page.evaluate(async () => {
        const answer: any = await (await fetch('/admin/api/overview')).json();
        return answer.data.queues.find((q: any) => q.queue === 'completion').drain_per_second;
      });
      expect(last).toBe(0);

      // Other tags a browser may report, each as navigator.language before the page's scripts run.
      for (const tag of ['C', '', 'en_US.UTF-8', 'sr-RS@latin', 'de-DE-u-co-phonebk', '!!']) {
        const odd = await context.newPage();
        const errors: string[] = [];
        odd.on('pageerror', (error) => errors.push(error.message));
        await odd.addInitScript((value) => Object.defineProperty(navigator, 'language', { value, configurable: true }), tag);
        await odd.goto(stack.gateway.url + '/admin');
        await odd.locator('tr[data-queue="completion"] .drain').waitFor({ timeout: 15_000 });
        expect(errors, tag).toEqual([]);
        await odd.close();
      }
      // And a library that throws as it loads all the same is said, not left at "Loading…".
      const broken = await context.newPage();
      await broken.addInitScript(() => { Intl.NumberFormat = function () { throw new RangeError('no number formats here'); } as never; });
      await broken.goto(stack.gateway.url + '/admin');
      await expect(broken.locator('[role=alert]').textContent({ timeout: 15_000 })).resolves.toMatch(/could not start: .*no number formats here/);
      await broken.close();
      await context.close();
    } finally {
      await euro.close();
    }
  }, 90_000);
});
