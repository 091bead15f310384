import { describe, expect, it, vi } from 'vitest';
import { callUpstream, openai } from '@gateway/providers';
import type { Channel, CompletionRequest, ModelCaller } from '@gateway/contracts';
import { createLogger } from '@gateway/log';
import { issueApiKey, type NewChannel } from '@gateway/store';
import type { MockOpenAIUpstream } from '@gateway/testkit';
import { serveWhole, useRouterTestbed } from '@gateway/testkit/router';
import type { ModelRequest, RouteTarget } from './model-router.ts';
import { newRouteRecord, type RouteRecord } from './route-record.ts';
import { routingKeys } from './routing-keys.ts';

const bed = useRouterTestbed({ failuresBeforeCooldown: 100 });
const log = createLogger('test', 'silent');
let seq = 0;

async function caller(conversation: string, opening = false): Promise<ModelCaller> {
  const user = await bed.store.users.create({ username: `sticky${++seq}`, password_hash: 'x', group: 'default' });
  const { token } = await bed.store.tokens.create({ user_id: user.id, name: 't', unlimited_quota: true }, issueApiKey().issued);
  return { tokenId: token.id, userId: user.id, group: 'default', conversation: { key: conversation, ...(opening ? { opening } : {}) } };
}

async function channel(mock: MockOpenAIUpstream, model: string, fields: Partial<NewChannel> = {}): Promise<Channel> {
  const created = await bed.store.channels.create({ name: 'c', type: 'openai', key: 'sk-x', base_url: mock.url, models: [model], timeout_ms: 2000, ...fields });
  await vi.waitFor(async () => expect((await bed.router.channels.current()).servingModel(['openai'], model).some((c) => c.id === created.id)).toBe(true));
  return created;
}

/** One whole completion for the caller; resolves to the channel that served it and the route record. */
async function serve(model: string, who: ModelCaller): Promise<{ channelId: number; record: RouteRecord }> {
  const record = newRouteRecord();
  const request: ModelRequest = { caller: who, types: ['openai'], model, signal: new AbortController().signal, deadline: Date.now() + 10_000, log, record };
  const channelId = await serveWhole(bed.router, request, async (target: RouteTarget) => {
    const response = await callUpstream(openai.completions, target, { model, prompt: 'hi' } as CompletionRequest);
    return { value: target.channel.id, usage: { totalTokens: response.usage.total_tokens } };
  });
  return { channelId, record };
}

describe('ModelRouter: a conversation on the channel of its last turn', () => {
  it('goes back to its channel even when another weighs far more, and remembers it an hour after each turn', async () => {
    const [light, heavy] = [await bed.upstream(), await bed.upstream()];
    const m = `sticky-model-${++seq}`;
    const a = await channel(light, m, { weight: 1 });
    await channel(heavy, m, { weight: 1000 });
    const who = await caller(`conv-${seq}`);
    await bed.router.sticky.remember(who.conversation!, a.id);
    for (let turn = 0; turn < 5; turn++) expect(await serve(m, who)).toMatchObject({ channelId: a.id, record: { sticky: 'kept' } });
    expect(heavy.requests).toHaveLength(0);
    const ttl = await bed.redis.pttl(routingKeys.sticky(who.conversation!.key));
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });

  it('remembers the channel of a request that holds only an opening (perhaps a one-off) five minutes, and an hour once the conversation goes on', async () => {
    const mock = await bed.upstream();
    const m = `sticky-model-${++seq}`;
    const a = await channel(mock, m);
    const first = await caller(`conv-${seq}`, true);
    expect(await serve(m, first)).toMatchObject({ channelId: a.id, record: { sticky: 'new' } });
    const key = routingKeys.sticky(first.conversation!.key);
    expect(await bed.redis.pttl(key)).toBeGreaterThan(290_000);
    expect(await bed.redis.pttl(key)).toBeLessThanOrEqual(300_000);
    expect(await serve(m, { ...first, conversation: { key: first.conversation!.key } })).toMatchObject({ channelId: a.id, record: { sticky: 'kept' } });
    expect(await bed.redis.pttl(key)).toBeGreaterThan(3_500_000);
  });

  it('moves when its channel is full (and says so), and stays where it moved', async () => {
    const [limited, open] = [await bed.upstream(), await bed.upstream()];
    const m = `sticky-model-${++seq}`;
    const a = await channel(limited, m, { max_concurrency: 1 });
    const b = await channel(open, m);
    const who = await caller(`conv-${seq}`);
    await bed.router.sticky.remember(who.conversation!, a.id);
    // Another request holds the limited channel's only slot.
    const { leases: [held] } = await bed.router.leases.tryAcquire(a.id, 1);
    expect(held).toBeDefined();
    try {
      expect(await serve(m, who)).toMatchObject({ channelId: b.id, record: { sticky: 'moved:full' } });
    } finally {
      await bed.router.leases.release(held!);
    }
    expect(await serve(m, who)).toMatchObject({ channelId: b.id, record: { sticky: 'kept' } });
    expect(limited.requests).toHaveLength(0);
  });

  it('fails over as always when its channel fails, logged moved:failed after the failed attempt', async () => {
    const [failing, good] = [await bed.upstream(), await bed.upstream()];
    failing.setBehaviour({ status: 500 });
    const m = `sticky-model-${++seq}`;
    const a = await channel(failing, m);
    const b = await channel(good, m);
    const who = await caller(`conv-${seq}`);
    await bed.router.sticky.remember(who.conversation!, a.id);
    const { channelId, record } = await serve(m, who);
    expect(channelId).toBe(b.id);
    expect(record.sticky).toBe('moved:failed');
    expect(record.attempts.map((x) => [x.channel_id, x.status])).toEqual([[a.id, 500], [b.id, 200]]);
    expect(await bed.redis.get(routingKeys.sticky(who.conversation!.key))).toBe(String(b.id));
  });

  it('leaves a request of no conversation as it was: no sticky outcome, nothing remembered', async () => {
    const mock = await bed.upstream();
    const m = `sticky-model-${++seq}`;
    await channel(mock, m);
    const who = { ...(await caller('unused')), conversation: undefined };
    const before = await bed.redis.keys('gw:sticky:*');
    const { record } = await serve(m, who);
    expect(record.sticky).toBeUndefined();
    expect(await bed.redis.keys('gw:sticky:*')).toEqual(before);
  });
});
