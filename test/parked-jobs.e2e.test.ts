/**
 * A job a completion worker took beyond its slots for another tenant's sake waits there for a
 * slot (parked): its client leaving frees it at once, and a worker that stops answers it at once
 * with a 503 and Retry-After (send it again) rather than running it while it drains; the request
 * log's row says which. Real Redis, PostgreSQL, gateway and worker processes (one slot), mock upstreams.
 */
import { describe, expect } from 'vitest';
import { Redis } from 'ioredis';
import type { MockOpenAIUpstream, ServiceProcess, Stack } from '@gateway/testkit';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ database: true, workers: [] });

/** One slot, and room in the lane for a job parked beside it and another tenant's. */
const ONE_SLOT = { COMPLETION_CONCURRENCY: '1', QUEUE_WAITING_PER_SLOT: '2', SHUTDOWN_TIMEOUT_MS: '20000' };

let seq = 0;
async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `parked-${++seq}`, password: 'tenant-password' });
  return (await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true })).key as string;
}

function complete(stack: Stack, key: string, model: string, requestId: string, signal?: AbortSignal) {
  return fetch(`${stack.gateway.url}/v1/completions`, {
    method: 'POST', signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ model, prompt: 'hi' }),
  }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() }), (error: Error) => ({ status: 0, retryAfter: null, body: error.name }));
}

/**
 * Tenant A's first request holds the worker's one slot on `slow`; A's second is queued, then
 * tenant B's (to `quick`): the lane takes one more job for B's sake, A's second (first in the
 * queue), which waits for A's slot; then B's, which runs beside. Returns A's two requests.
 */
async function parkA2(stack: Stack, slow: MockOpenAIUpstream, model: string, quickModel: string, name: string) {
  const [a, b] = [await tenant(stack), await tenant(stack)];
  const a1 = complete(stack, a, model, `${name}-a1`);
  await expect.poll(() => slow.inFlight, { timeout: 20_000 }).toBe(1);
  const redis = new Redis(stack.redis.url);
  const waiting = async () => (await redis.llen('{gw}:completion:wait')) + (await redis.zcard('{gw}:completion:prioritized'));
  const client = new AbortController();
  const a2 = complete(stack, a, model, `${name}-a2`, client.signal);
  await expect.poll(waiting, { timeout: 10_000 }).toBe(1);
  redis.disconnect();
  // B's answer means A's second was taken before it, and waits in the worker.
  expect((await complete(stack, b, quickModel, `${name}-b`)).status).toBe(200);
  expect(slow.requests).toHaveLength(1);
  return { a1, a2, leave: () => client.abort() };
}

describe('a job parked in a full worker', () => {
  it("is dropped as soon as its client leaves (a 499 row at once, while the slot's request runs on), never reaching its upstream", async ({ stack, upstream, channel }) => {
    const worker = await stack.add('completion-worker', ONE_SLOT);
    const slow = await upstream.openai({ delayMs: 15_000 });
    await channel(slow, ['parked-slow']);
    await channel(await upstream.openai(), ['parked-quick']);
    const { a1, a2, leave } = await parkA2(stack, slow, 'parked-slow', 'parked-quick', 'left');
    leave();
    expect((await a2).status).toBe(0);
    const row = await loggedRow(stack, 'left-a2', 8000);
    expect(row).toMatchObject({ status: 499, error_code: 'cancelled', prompt_tokens: 0 });
    // Before the slot's request ended (15 s): not when a slot frees.
    expect(slow.inFlight).toBe(1);
    expect((await a1).status).toBe(200);
    expect(slow.requests).toHaveLength(1);
    await worker.stop('SIGTERM');
  }, 120_000);

  it('is answered 503 with Retry-After at once when its worker stops, and logged so, while the slot\'s request is drained', async ({ stack, upstream, channel }) => {
    const worker: ServiceProcess = await stack.add('completion-worker', ONE_SLOT);
    const slow = await upstream.openai({ delayMs: 6000 });
    await channel(slow, ['parked-slow-2']);
    await channel(await upstream.openai(), ['parked-quick-2']);
    const { a1, a2 } = await parkA2(stack, slow, 'parked-slow-2', 'parked-quick-2', 'stopped');
    const started = Date.now();
    const exited = worker.stop('SIGTERM');
    const answer = await a2;
    const ms = Date.now() - started;
    expect(answer.status).toBe(503);
    expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    expect(answer.body).toMatch(/the worker is stopping .*send it again/);
    // Not held until the slot's request ended (6 s from its start) or the stop's deadline (20 s).
    expect(ms).toBeLessThan(4000);
    expect(slow.inFlight).toBe(1);
    expect(await loggedRow(stack, 'stopped-a2')).toMatchObject({ status: 503, error_code: 'overloaded', error_message: expect.stringMatching(/the worker is stopping/) });
    // The request at work is drained: answered whole, the worker gone after it.
    expect((await a1).status).toBe(200);
    expect(await exited).toBe(0);
    expect(slow.requests).toHaveLength(1);
    console.log(`[parked] a parked job answered 503 ${ms} ms after the worker's stop signal`);
  }, 120_000);
});
