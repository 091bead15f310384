/**
 * Bursts end to end: real Redis, a gateway, completion-worker processes and mock OpenAI
 * upstreams over HTTP. A channel's max_concurrency holds across worker processes, a worker
 * killed while holding leases leaks them no longer than the lease time, and upstream 429s turn
 * into waiting, not errors, unless waiting would pass the request's time-out.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { Redis } from 'ioredis';
import type { ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const LEASE_TTL_MS = 3000;

/** Sends a completion and returns the HTTP status and Retry-After, whatever the outcome. */
type Send = (key: string, model: string, gateway?: ServiceProcess) => Promise<{ status: number; retryAfter: string | null }>;

const it = stackTest({
  workers: ['completion-worker'],
  env: { CHANNEL_LEASE_TTL_MS: String(LEASE_TTL_MS), COMPLETION_CONCURRENCY: '8', REQUEST_TIMEOUT_MS: '20000' },
  channelDefaults: { timeout_ms: 10_000 },
}).extend('send', async ({ stack }): Promise<Send> => async (key, model, gateway = stack.gateway) => {
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000 });
  try {
    await client.completions.create({ model, prompt: 'hello' });
    return { status: 200, retryAfter: null };
  } catch (error) {
    if (error instanceof OpenAI.APIError) return { status: error.status ?? 0, retryAfter: error.headers?.get('retry-after') ?? null };
    throw error;
  }
});

let workers: ServiceProcess[];
/** A second gateway whose requests time out after 2 s. */
let hasty: ServiceProcess;
let redis: Redis;

it.beforeAll(async ({ stack }) => {
  [hasty] = await Promise.all([stack.add('gateway', { REQUEST_TIMEOUT_MS: '2000' }), stack.add('completion-worker')]);
  workers = stack.services.filter((s) => s.name === 'completion-worker');
  redis = new Redis(stack.redis.url);
});
it.afterAll(() => redis?.disconnect());

let seq = 0;
const uniqueModel = () => `burst-${++seq}`;

const jobsLogged = (worker: ServiceProcess) => worker.logs.filter((l) => l.msg === 'job' && l.outcome === 'ok').length;

describe('per-channel concurrency across worker processes', () => {
  it('never lets more than max_concurrency requests reach the upstream, and every request of a 10× burst succeeds', async ({ upstream, channel, apiKey, send }) => {
    const N = 4;
    const mock = await upstream.openai();
    mock.setBehaviour({ delayMs: 100 });
    mock.limitConcurrency(N);
    const model = uniqueModel();
    await channel(mock, [model], { max_concurrency: N });
    const { key } = await apiKey();
    const before = workers.map(jobsLogged);

    const results = await Promise.all(Array.from({ length: 10 * N }, () => send(key, model)));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(mock.requests.length).toBe(10 * N);
    expect(mock.maxInFlight).toBeLessThanOrEqual(N);
    expect(mock.overLimit).toBe(0);
    // Both worker processes took part.
    await expect.poll(() => workers.map((w, i) => jobsLogged(w) - before[i]!).every((n) => n > 0)).toBe(true);
  });

  it('frees the leases of a worker killed while holding them once the lease time has passed', async ({ stack, upstream, channel, apiKey, send }) => {
    const N = 3;
    const mock = await upstream.openai();
    mock.limitConcurrency(N);
    mock.next(...Array.from({ length: N }, () => ({ hang: true })));
    const model = uniqueModel();
    const { id } = await channel(mock, [model], { max_concurrency: N });
    const { key } = await apiKey();
    // Their jobs time out (2 s) before a surviving worker could take them over from the dead one.
    const held = Array.from({ length: N }, () => send(key, model, hasty));
    await mock.waitFor((m) => m.inFlight === N);
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    const killed = Date.now();
    expect(await redis.zcard(`gw:channel-leases:${id}`)).toBe(N);

    workers = [await stack.add('completion-worker')];
    await mock.waitFor((m) => m.inFlight === 0);
    mock.reset();
    mock.setBehaviour({ delayMs: 1000 });
    mock.limitConcurrency(N);
    const sent = Date.now();
    const results = await Promise.all(Array.from({ length: N }, () => send(key, model)));
    expect(results.every((r) => r.status === 200)).toBe(true);
    const arrivals = mock.requests.map((r) => r.at);
    expect(arrivals).toHaveLength(N);
    // Not before the dead worker's last renewal ran out (every third of the lease time) …
    expect(Math.min(...arrivals) - killed).toBeGreaterThanOrEqual(LEASE_TTL_MS * (2 / 3) - 200);
    // … nor later than the lease time (or than the new worker's start, if that took longer) …
    expect(Math.max(...arrivals)).toBeLessThanOrEqual(Math.max(killed + LEASE_TTL_MS, sent) + 1000);
    // … and then all N at once again.
    expect(mock.maxInFlight).toBe(N);
    expect(mock.overLimit).toBe(0);
    await Promise.all(held);
  }, 20_000);
});

describe('upstream 429 as back-pressure', () => {
  it('turns 429s with Retry-After into waiting: every request still succeeds', async ({ upstream, channel, apiKey, send }) => {
    const K = 4;
    const mock = await upstream.openai();
    mock.next(...Array.from({ length: K }, () => ({ status: 429, retryAfter: 1 })));
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 10 }, () => send(key, model)));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(mock.requests.length).toBe(10 + K);
  });

  it('answers 429 with Retry-After when waiting would pass the time-out', async ({ upstream, channel, apiKey, send }) => {
    const mock = await upstream.openai();
    mock.setBehaviour({ status: 429, retryAfter: 5 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    let started = Date.now();
    expect(await send(key, model, hasty)).toEqual({ status: 429, retryAfter: '5' });
    expect(Date.now() - started).toBeLessThan(1000);
    expect(mock.requests.length).toBe(1);

    // Without Retry-After the worker backs off and tries again until the time-out (2 s) is near.
    mock.setBehaviour({ status: 429 });
    const otherModel = uniqueModel();
    await channel(mock, [otherModel]);
    started = Date.now();
    const result = await send(key, otherModel, hasty);
    expect(result.status).toBe(429);
    expect(Number(result.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(mock.requests.length).toBeGreaterThanOrEqual(3);
  });
});
