import { describe, expect, it, vi } from 'vitest';
import type { Channel, CompletionRequest, ModelCaller } from '@gateway/contracts';
import { createLogger } from '@gateway/log';
import { UpstreamError } from '@gateway/contracts';
import { callUpstream, openai } from '@gateway/providers';
import { issueApiKey, type NewChannel } from '@gateway/store';
import { type MockOpenAIUpstream } from '@gateway/testkit';
import { serveWhole, useRouterTestbed } from '@gateway/testkit/router';
import { type ModelRequest, type RouteTarget } from './model-router.ts';
import { routingKeys } from './routing-keys.ts';

const bed = useRouterTestbed({ failuresBeforeCooldown: 100 });
const log = createLogger('test', 'silent');
const upstream = () => bed.upstream();

let modelSeq = 0;
async function caller(token: { remain_quota?: number; unlimited_quota?: boolean } = { unlimited_quota: true }, group = 'default'): Promise<ModelCaller> {
  const user = await bed.store.users.create({ username: `user${++modelSeq}`, password_hash: 'x', group });
  const { token: t } = await bed.store.tokens.create({ user_id: user.id, name: 't', ...token }, issueApiKey().issued);
  return { tokenId: t.id, userId: user.id, group };
}

/** A new channel, once the router has heard of it (the store announces it by pub/sub). */
async function channel(mock: MockOpenAIUpstream, model: string, fields: Partial<NewChannel> = {}): Promise<Channel> {
  const created = await bed.store.channels.create({ name: 'c', type: 'openai', key: `sk-${mock.url.slice(-5)}`, base_url: mock.url, models: [model], timeout_ms: 2000, ...fields });
  await vi.waitFor(async () => expect((await bed.router.channels.current()).servingModel(['openai'], model).some((c) => c.id === created.id)).toBe(true));
  return created;
}

function request(model: string, who: ModelCaller, signal = new AbortController().signal): ModelRequest {
  return { caller: who, types: ['openai'], model, signal, deadline: Date.now() + 10_000, log };
}

/** The completion worker's call, reduced to what routing needs. */
const complete = (body: Partial<CompletionRequest> = {}) => async (target: RouteTarget) => {
  const response = await callUpstream(
    openai.completions,
    target,
    { model: 'x', prompt: 'hello there', ...body } as CompletionRequest,
  );
  return { value: { response, channelId: target.channel.id, upstreamModel: target.upstreamModel }, usage: { totalTokens: response.usage.total_tokens } };
};

const model = () => `model-${++modelSeq}`;

describe('ModelRouter', () => {
  it('fails over from a failing channel to the next, never back to the one that failed', async () => {
    const [bad, good] = [await upstream(), await upstream()];
    bad.setBehaviour({ status: 500 });
    const m = model();
    await channel(bad, m, { priority: 10 });
    const ok = await channel(good, m, { priority: 0 });
    const result = await serveWhole(bed.router, request(m, await caller()), complete());
    expect(result.channelId).toBe(ok.id);
    expect(bad.requests.length).toBe(1);
    expect(good.requests.length).toBe(1);
  });

  it('returns the caller\'s own 4xx as the upstream gave it, without failing over', async () => {
    const [strict, other] = [await upstream(), await upstream()];
    const body = { error: { message: 'max_tokens is too large', type: 'invalid_request_error', param: 'max_tokens', code: null } };
    strict.setBehaviour({ status: 400, body });
    const m = model();
    await channel(strict, m, { priority: 10 });
    await channel(other, m);
    await expect(serveWhole(bed.router, request(m, await caller()), complete())).rejects.toMatchObject({ status: 400, upstreamBody: body });
    expect(other.requests.length).toBe(0);
  });

  it("keeps a channel's failures when a caller's own 4xx comes between them: one tenant's bad requests cannot wipe a failing channel's record", async () => {
    const [flaky, other] = [await upstream(), await upstream()];
    const m = model();
    const c = await channel(flaky, m, { priority: 10 });
    await channel(other, m);
    const who = await caller();
    for (const status of [500, 400, 500]) {
      flaky.next({ status });
      await serveWhole(bed.router, request(m, who), complete()).catch(() => {});
    }
    expect(await bed.redis.hget(routingKeys.health(c.id), 'failures')).toBe('2');
  });

  it("blames a time-out at the request's own deadline on the request, not on the channel", async () => {
    const slow = await upstream();
    slow.setBehaviour({ hang: true });
    const m = model();
    const c = await channel(slow, m, { timeout_ms: 2000 });
    const late = { ...request(m, await caller()), deadline: Date.now() + 300 };
    await expect(serveWhole(bed.router, late, complete())).rejects.toMatchObject({ status: 504 });
    expect(await bed.redis.hget(routingKeys.health(c.id), 'failures')).toBeNull();
  });

  it('maps the last failure when every channel failed: 502, 504; 429 with Retry-After past the deadline', async () => {
    const a = await upstream();
    const b = await upstream();
    const m1 = model();
    a.setBehaviour({ status: 503 });
    b.setBehaviour({ status: 500 });
    await channel(a, m1);
    await channel(b, m1);
    await expect(serveWhole(bed.router, request(m1, await caller()), complete())).rejects.toMatchObject({ status: 502, code: 'upstream_error' });
    expect(a.requests.length + b.requests.length).toBe(2);

    const slow = await upstream();
    slow.setBehaviour({ hang: true });
    const m2 = model();
    await channel(slow, m2, { timeout_ms: 200 });
    await expect(serveWhole(bed.router, request(m2, await caller()), complete())).rejects.toMatchObject({ status: 504, code: 'timeout' });
    await slow.waitFor((x) => x.aborted === 1);

    const limited = await upstream();
    // A Retry-After longer than the request may wait: 429 at once, not a wait.
    limited.setBehaviour({ status: 429, retryAfter: 30 });
    const m3 = model();
    await channel(limited, m3);
    await expect(serveWhole(bed.router, request(m3, await caller()), complete())).rejects.toMatchObject({ status: 429, retryAfter: 30 });
    expect(limited.requests.length).toBe(1);
  });

  it('answers 404 for a model no channel serves and 503 when none may take it now', async () => {
    await expect(serveWhole(bed.router, request(model(), await caller()), complete())).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    const mock = await upstream();
    const m = model();
    await channel(mock, m, { status: 2 });
    await channel(mock, m, { group: 'vip' });
    await expect(serveWhole(bed.router, request(m, await caller()), complete())).rejects.toMatchObject({ status: 503, code: 'no_channel' });
    expect((await serveWhole(bed.router, request(m, await caller({ unlimited_quota: true }, 'vip')), complete())).response.model).toBe('x');
  });

  it('sees a channel change at once: a disabled tag is never chosen on the next request', async () => {
    const [tagged, plain] = [await upstream(), await upstream()];
    const m = model();
    await channel(tagged, m, { priority: 10, tag: `tag-${m}` });
    await channel(plain, m);
    const who = await caller();
    await serveWhole(bed.router, request(m, who), complete());
    expect(tagged.requests.length).toBe(1);
    await bed.store.channels.setStatusByTag(`tag-${m}`, 2, 'disabled by tag');
    // The change was announced before the write returned. In this one process the announcement
    // and the write's reply race on two sockets; a PING on the router's pub/sub connection is
    // answered after the announcement, so once it returns the router has heard it. (Across
    // processes the admin's reply travels through the gateway first, which takes longer.)
    await bed.subscriber.ping();
    for (let i = 0; i < 10; i++) await serveWhole(bed.router, request(m, who), complete());
    expect(tagged.requests.length).toBe(1);
    expect(plain.requests.length).toBe(10);
  });

  it('sends the mapped model name upstream', async () => {
    const mock = await upstream();
    const m = model();
    await channel(mock, `${m}-upstream`, { model_mapping: { [m]: `${m}-upstream` } });
    const result = await serveWhole(bed.router, request(m, await caller()), complete());
    expect(result.upstreamModel).toBe(`${m}-upstream`);
    expect(mock.requests[0]!.body.model).toBe(`${m}-upstream`);
  });

  it('checks quota before any upstream call, and charges the usage of the answer', async () => {
    const mock = await upstream();
    const m = model();
    const ch = await channel(mock, m);
    const who = await caller({ remain_quota: 5 });
    const { response } = await serveWhole(bed.router, request(m, who), complete());
    await bed.router.ledger.flush();
    const token = (await bed.store.tokens.get(who.tokenId))!;
    expect(token.used_quota).toBe(response.usage.total_tokens);
    expect(token.remain_quota).toBe(5 - response.usage.total_tokens);
    expect((await bed.store.channels.get(ch.id))!.used_quota).toBe(response.usage.total_tokens);
    await expect(serveWhole(bed.router, request(m, who), complete())).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect(mock.requests.length).toBe(1);
  });

  it('does not fail over once output reached the client, and charges what was used', async () => {
    const [first, second] = [await upstream(), await upstream()];
    const m = model();
    const ch = await channel(first, m, { priority: 10 });
    await channel(second, m);
    const who = await caller();
    // A stream as the relay serves it: a piece sent (the attempt committed), then the upstream breaks.
    const run = (async () => {
      for await (const attempt of bed.router.attempts(request(m, who))) {
        attempt.commit();
        await attempt.fail(new UpstreamError({ kind: 'connection', message: 'broke mid-stream' }), { totalTokens: 3 });
      }
    })();
    await expect(run).rejects.toMatchObject({ status: 502 });
    await bed.router.ledger.flush();
    expect((await bed.store.channels.get(ch.id))!.used_quota).toBe(3);
    expect(second.requests.length).toBe(0);
  });

  it('stops at once when the request is cancelled, aborting the upstream call', async () => {
    const [hanging, other] = [await upstream(), await upstream()];
    hanging.setBehaviour({ hang: true });
    const m = model();
    await channel(hanging, m, { priority: 10 });
    await channel(other, m);
    const controller = new AbortController();
    const run = serveWhole(bed.router, request(m, await caller(), controller.signal), complete());
    await hanging.waitFor((x) => x.inFlight === 1);
    controller.abort();
    await expect(run).rejects.toMatchObject({ status: 499, code: 'cancelled' });
    await hanging.waitFor((x) => x.aborted === 1);
    expect(other.requests.length).toBe(0);
  });
});
