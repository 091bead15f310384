/**
 * What every request cost (issue 43), end to end: real gateway and worker processes, Redis,
 * PostgreSQL, a mock OpenAI upstream and the OpenAI SDK. Prices set through the management API
 * (`PUT /api/price/`, a channel's own among them) and through new-api's ratio options
 * (`PUT /api/option/`); each request's cost in its log row is its price times the usage the
 * client got back, times its user's group ratio; `/api/log/stat` and the console sum it by key,
 * user and model; a model with no price is logged as costing nothing, and says so.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const it = stackTest({ database: true, workers: ['completion-worker'] });

/** USD per million tokens, as the test sets them: whole and binary-exact rates. */
type Price = { input: number; output: number };

/** What `usage` costs at `price` × `groupRatio`, in nano-dollars: 1 USD per million is 1,000 nano a token. */
const nanos = (usage: { prompt_tokens: number; completion_tokens: number }, price: Price, groupRatio = 1) =>
  Math.ceil((usage.prompt_tokens * price.input * 1000 + usage.completion_tokens * price.output * 1000) * groupRatio);

const client = (stack: Stack, key: string, requestId: string) => new OpenAI({
  baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000, defaultHeaders: { 'x-request-id': requestId },
});

let seq = 0;

/** One chat request, whole or streamed, and the usage its client got back. */
async function chat(stack: Stack, key: string, model: string, stream: boolean): Promise<{ requestId: string; usage: OpenAI.CompletionUsage }> {
  const requestId = `spend-${++seq}-${model}`;
  const messages = [{ role: 'user' as const, content: `what does request ${seq} cost` }];
  if (!stream) {
    const answer = await client(stack, key, requestId).chat.completions.create({ model, messages });
    return { requestId, usage: answer.usage! };
  }
  const chunks = await client(stack, key, requestId).chat.completions.create({ model, messages, stream: true, stream_options: { include_usage: true } });
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of chunks) usage = chunk.usage ?? usage;
  return { requestId, usage: usage! };
}

describe('spend', () => {
  it("logs each request's cost at its model's price (set, by ratio, a channel's own), times its group's ratio, sums it by key, user and model, and a model with no price costs nothing and says so", async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'a priced answer of a few words' });
    const [set, ratio, own, free, warm] = ['set', 'ratio', 'own', 'free', 'warm'].map((name) => `spend-${name}-${Date.now()}`) as [string, string, string, string, string];
    const groups = { group: 'default,vip' };
    const shared = await channel(mock, [set, ratio, free, warm], groups);
    const dedicated = await channel(mock, [own], groups);

    // new-api's options first (a ModelRatio written later would replace the prices set for its models).
    const prices: Record<string, Price> = { [set]: { input: 3, output: 15 }, [ratio]: { input: 1.5, output: 6 }, [own]: { input: 1, output: 2 } };
    const option = (key: string, value: object) => stack.admin('PUT', '/api/option/', { key, value: JSON.stringify(value) });
    expect((await option('ModelRatio', { [ratio]: 0.75 })).status).toBe(200);
    expect((await option('CompletionRatio', { [ratio]: 4 })).status).toBe(200);
    expect((await option('GroupRatio', { vip: 2 })).status).toBe(200);
    const setPrice = (body: object) => stack.admin('PUT', '/api/price/', body);
    expect((await setPrice({ model: set, input: 3, output: 15 })).status).toBe(200);
    // `own` has a price of its own, and a dearer one on no channel: the channel's own wins on its channel.
    expect((await setPrice({ model: own, input: 50, output: 50 })).status).toBe(200);
    expect((await setPrice({ model: own, channel_id: dedicated.id, input: 1, output: 2 })).status).toBe(200);
    expect((await setPrice({ model: warm, input: 1, output: 1 })).status).toBe(200);
    const listed = await stack.adminData('GET', `/api/price/?model=${ratio}`);
    expect(listed.items).toEqual([{ model: ratio, price: { input: 1.5, output: 6 }, source: 'ratio' }]);

    const alice = await stack.adminData('POST', '/api/user/', { username: `alice${Date.now() % 100000}`, password: 'alice-password' });
    const vip = await stack.adminData('POST', '/api/user/', { username: `vip${Date.now() % 100000}`, password: 'vip-password', group: 'vip' });
    const key = async (user: { id: number }, name: string) => stack.adminData('POST', '/api/token/', { name, user_id: user.id, unlimited_quota: true });
    const [first, second, vipKey] = [await key(alice, 'first'), await key(alice, 'second'), await key(vip, 'vip')];
    const warmKey = await apiKey();

    // Workers hear of the prices on the change feed: the last one set priced, every one before it is.
    await expect.poll(async () => (await loggedRow(stack, (await chat(stack, warmKey.key, warm, false)).requestId)).priced, { timeout: 15_000, interval: 200 }).toBe(true);

    const made: { requestId: string; usage: OpenAI.CompletionUsage; key: number; user: number; model: string; expected?: number }[] = [];
    const run = async (k: { id: number; key: string }, user: { id: number }, model: string, stream: boolean, groupRatio = 1) => {
      const { requestId, usage } = await chat(stack, k.key, model, stream);
      made.push({ requestId, usage, key: k.id, user: user.id, model, ...(prices[model] ? { expected: nanos(usage, prices[model]!, groupRatio) } : {}) });
    };
    await run(first, alice, set, false);
    await run(first, alice, set, true);
    await run(first, alice, ratio, false);
    await run(second, alice, ratio, true);
    await run(second, alice, own, false);
    await run(second, alice, free, false);
    await run(vipKey, vip, set, false, 2);
    await run(vipKey, vip, ratio, true, 2);

    for (const request of made) {
      const row = await loggedRow(stack, request.requestId);
      expect(row.total_tokens, request.requestId).toBe(request.usage.total_tokens);
      if (request.expected === undefined) {
        expect(row, 'a model with no price').toMatchObject({ priced: false, cost: 0, status: 200 });
        expect(row.cost_nanos).toBeUndefined();
      } else {
        expect(row, request.requestId).toMatchObject({ priced: true, cost_nanos: request.expected });
        expect(row.cost).toBeCloseTo(request.expected / 1e9, 12);
      }
    }
    const ownRow = await loggedRow(stack, made.find((r) => r.model === own)!.requestId);
    expect(ownRow.channel_id, "served by the channel whose own price it paid").toBe(dedicated.id);
    expect(made.find((r) => r.model === set && r.key === vipKey.id)!.expected, 'the group ratio doubles it').toBe(2 * nanos(made.find((r) => r.model === set && r.key === vipKey.id)!.usage, prices[set]!));

    // The sums, by key, user and model, over the requests made here.
    const sum = (pick: (r: (typeof made)[number]) => boolean) => made.filter(pick).reduce((total, r) => total + (r.expected ?? 0), 0);
    const since = Math.floor(Date.now() / 1000) - 600;
    const stat = async (groupBy: string) => new Map(((await stack.adminData('GET', `/api/log/stat?group_by=${groupBy}&start_timestamp=${since}`)) as any[]).map((line) => [line.key, line]));
    const byKey = await stat('token');
    for (const k of [first, second, vipKey]) {
      expect(byKey.get(k.id), `key ${k.id}`).toMatchObject({ requests: made.filter((r) => r.key === k.id).length, cost_nanos: sum((r) => r.key === k.id) });
      expect(byKey.get(k.id).cost).toBeCloseTo(sum((r) => r.key === k.id) / 1e9, 12);
    }
    expect(byKey.get(second.id).unpriced, "the free model's request").toBe(1);
    const byUser = await stat('user');
    expect(byUser.get(alice.id)).toMatchObject({ cost_nanos: sum((r) => r.user === alice.id) });
    expect(byUser.get(vip.id)).toMatchObject({ cost_nanos: sum((r) => r.user === vip.id), unpriced: 0 });
    const byModel = await stat('model');
    for (const model of [set, ratio, own]) expect(byModel.get(model), model).toMatchObject({ cost_nanos: sum((r) => r.model === model) });
    expect(byModel.get(free)).toMatchObject({ cost: 0, cost_nanos: 0, unpriced: 1, requests: 1 });
    const byChannel = await stat('channel');
    expect(byChannel.get(dedicated.id)).toMatchObject({ requests: 1, cost_nanos: sum((r) => r.model === own) });

    // The console: spend per key, user and model today and this month; the price table and the models at no price.
    await expect.poll(async () => (await stack.adminData('GET', '/admin/api/spend')).keys.find((k: any) => k.key === first.id)?.day, { timeout: 20_000, interval: 500 })
      .toBeCloseTo(sum((r) => r.key === first.id) / 1e9, 12);
    const spend = await stack.adminData('GET', '/admin/api/spend');
    expect(spend.keys.find((k: any) => k.key === second.id)).toMatchObject({ name: 'second', day_requests: 3, unpriced: 1 });
    expect(spend.users.find((u: any) => u.key === vip.id).month).toBeCloseTo(sum((r) => r.user === vip.id) / 1e9, 12);
    expect(spend.models.find((m: any) => m.key === free)).toMatchObject({ day: 0, unpriced: 1 });
    const table = await stack.adminData('GET', '/admin/api/prices');
    expect(table.items).toEqual(expect.arrayContaining([
      { model: set, input: 3, output: 15, source: 'set' },
      { model: ratio, input: 1.5, output: 6, source: 'ratio' },
      { model: own, channel_id: dedicated.id, input: 1, output: 2, source: 'channel' },
      expect.objectContaining({ model: 'gpt-4o', source: 'default' }),
    ]));
    expect(table.not_priced).toEqual([{ model: free, channel_ids: [shared.id] }]);
    expect(table.group_ratios).toEqual({ default: 1, vip: 2 });
  });
});
