/**
 * The router under bursts: waiting for a channel's concurrency lease instead of failing, and
 * treating upstream 429s as back-pressure (wait, then try again) within the request's deadline.
 * Real Redis, real mock upstreams over HTTP.
 */
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import type { Channel, CompletionRequest, ModelCaller } from '@gateway/contracts';
import { createLogger } from '@gateway/log';
import { callUpstream, openai } from '@gateway/providers';
import { issueApiKey, type NewChannel } from '@gateway/store';
import { type MockOpenAIUpstream } from '@gateway/testkit';
import { backoffMs, RetryAfterWindows } from './back-pressure.ts';
import { serveWhole, useRouterTestbed } from '@gateway/testkit/router';
import { type ModelRequest, type RouteTarget } from './model-router.ts';
import { routingKeys } from './routing-keys.ts';

const bed = useRouterTestbed({ failuresBeforeCooldown: 1 });
const log = createLogger('test', 'silent');
const upstream = () => bed.upstream();
let who: ModelCaller;
beforeAll(async () => {
  const user = await bed.store.users.create({ username: 'burst', password_hash: 'x' });
  const { token } = await bed.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true }, issueApiKey().issued);
  who = { tokenId: token.id, userId: user.id, group: 'default' };
});

let seq = 0;
const model = () => `burst-model-${++seq}`;
/** A new channel, once the router has heard of it (the store announces it by pub/sub). */
async function channel(mock: MockOpenAIUpstream, m: string, fields: Partial<NewChannel> = {}): Promise<Channel> {
  const created = await bed.store.channels.create({ name: 'c', type: 'openai', key: 'sk-k', base_url: mock.url, models: [m], timeout_ms: 5000, ...fields });
  await vi.waitFor(async () => expect((await bed.router.channels.current()).servingModel(['openai'], m).some((c) => c.id === created.id)).toBe(true));
  return created;
}
const request = (m: string, deadlineMs = 10_000, signal = new AbortController().signal): ModelRequest =>
  ({ caller: who, types: ['openai'], model: m, signal, deadline: Date.now() + deadlineMs, log });

const complete = async (target: RouteTarget) => {
  const response = await callUpstream(
    openai.completions,
    target,
    { model: 'x', prompt: 'hello' } as CompletionRequest,
  );
  return { value: target.channel.id, usage: { totalTokens: response.usage.total_tokens } };
};

describe('per-channel concurrency', () => {
  it('waits for a lease instead of failing: the upstream never sees more than max_concurrency', async () => {
    const mock = await upstream();
    mock.setBehaviour({ delayMs: 40 });
    mock.limitConcurrency(2);
    const m = model();
    const ch = await channel(mock, m, { max_concurrency: 2 });
    const results = await Promise.all(Array.from({ length: 20 }, () => serveWhole(bed.router, request(m), complete)));
    expect(results).toEqual(Array(20).fill(ch.id));
    expect(mock.maxInFlight).toBe(2);
    expect(mock.overLimit).toBe(0);
    expect(await bed.redis.exists(routingKeys.leases(ch.id))).toBe(0);
  });

  it('uses the next channel in the choice order while the preferred one is full', async () => {
    const [small, spare] = [await upstream(), await upstream()];
    small.setBehaviour({ delayMs: 200 });
    const m = model();
    const preferred = await channel(small, m, { priority: 10, max_concurrency: 1 });
    const backup = await channel(spare, m, { priority: 0 });
    const results = await Promise.all([0, 1, 2].map(() => serveWhole(bed.router, request(m), complete)));
    expect(results.filter((id) => id === preferred.id)).toHaveLength(1);
    expect(results.filter((id) => id === backup.id)).toHaveLength(2);
  });

  it('gives the lease back when the call fails or is cancelled', async () => {
    const mock = await upstream();
    const m = model();
    const ch = await channel(mock, m, { max_concurrency: 1 });
    mock.setBehaviour({ status: 500 });
    await expect(serveWhole(bed.router, request(m), complete)).rejects.toMatchObject({ status: 502 });
    mock.setBehaviour({ hang: true });
    const controller = new AbortController();
    const run = serveWhole(bed.router, request(m, 10_000, controller.signal), complete);
    await mock.waitFor((x) => x.inFlight === 1);
    controller.abort();
    await expect(run).rejects.toMatchObject({ status: 499 });
    await expect.poll(() => bed.redis.zcard(routingKeys.leases(ch.id))).toBe(0);
  });
});

describe('upstream 429 as back-pressure', () => {
  it('waits for the Retry-After and tries again: every request succeeds', async () => {
    const mock = await upstream();
    mock.next({ status: 429, retryAfter: 1 }, { status: 429, retryAfter: 1 });
    const m = model();
    const ch = await channel(mock, m);
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 5 }, () => serveWhole(bed.router, request(m), complete)));
    expect(results).toEqual(Array(5).fill(ch.id));
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(mock.requests.length).toBe(7);
    // A 429 is not a failure of the channel: with a cooldown after one failure, it did not cool.
    expect(bed.router.health.isCoolingDown(ch.id)).toBe(false);
    expect(await bed.redis.hget(routingKeys.health(ch.id), 'failures')).toBeNull();
  });

  it('shares a Retry-After with the later requests of the process, which use another channel meanwhile', async () => {
    const [limited, other] = [await upstream(), await upstream()];
    limited.setBehaviour({ status: 429, retryAfter: 5 });
    const m = model();
    await channel(limited, m, { priority: 10 });
    const spare = await channel(other, m);
    expect(await serveWhole(bed.router, request(m), complete)).toBe(spare.id);
    expect(await serveWhole(bed.router, request(m), complete)).toBe(spare.id);
    expect(limited.requests.length).toBe(1);
  });

  it('backs off exponentially with jitter when the upstream gives no Retry-After', async () => {
    const mock = await upstream();
    mock.next({ status: 429 }, { status: 429 });
    const m = model();
    await channel(mock, m);
    const started = Date.now();
    await serveWhole(bed.router, request(m), complete);
    const elapsed = Date.now() - started;
    // 250–500 ms, then 500–1000 ms.
    expect(elapsed).toBeGreaterThanOrEqual(740);
    expect(elapsed).toBeLessThan(2000);
    expect(mock.requests.length).toBe(3);
  });

  it('answers 429 with Retry-After before the deadline when waiting would pass it', async () => {
    const mock = await upstream();
    mock.setBehaviour({ status: 429 });
    const m = model();
    await channel(mock, m);
    const started = Date.now();
    const error = await serveWhole(bed.router, request(m, 1200), complete).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryAfter: expect.any(Number) });
    expect(Date.now() - started).toBeLessThan(1200);
    expect(mock.requests.length).toBeGreaterThanOrEqual(2);
  });

  it('treats an upstream account out of quota as a failure, not as a reason to wait', async () => {
    const [broke, fine] = [await upstream(), await upstream()];
    broke.setBehaviour({ status: 429, retryAfter: 1, body: { error: { message: 'You exceeded your current quota', type: 'insufficient_quota', param: null, code: 'insufficient_quota' } } });
    const m = model();
    const dry = await channel(broke, m, { priority: 10 });
    const spare = await channel(fine, m);
    expect(await serveWhole(bed.router, request(m), complete)).toBe(spare.id);
    expect(bed.router.health.isCoolingDown(dry.id)).toBe(true);
    const alone = model();
    await channel(broke, alone);
    await expect(serveWhole(bed.router, request(alone), complete)).rejects.toMatchObject({ status: 502, code: 'upstream_error' });
  });
});

describe('back-off arithmetic', () => {
  it('doubles from 500 ms up to 8 s, half of it random', () => {
    expect(backoffMs(1, () => 0)).toBe(250);
    expect(backoffMs(1, () => 1)).toBe(500);
    expect(backoffMs(3, () => 0)).toBe(1000);
    expect(backoffMs(10, () => 1)).toBe(8000);
  });

  it('keeps the longer of two Retry-After windows', () => {
    const windows = new RetryAfterWindows();
    windows.note(1, 5000, 0);
    windows.note(1, 1000, 100);
    expect(windows.restingUntil(1, 200)).toBe(5000);
    expect(windows.restingUntil(1, 5000)).toBe(0);
  });
});
