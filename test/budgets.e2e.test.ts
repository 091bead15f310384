/**
 * Budgets in money: a key's and a user's `max_budget` over a period, held at each request's
 * worst-case cost across gateways and settled from its priced usage, through the SDKs clients
 * use; past it, 429 insufficient_quota in the door's own shape, saying when it resets.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { describe, expect } from 'vitest';
import { chatWorstCase, costOf, periodEnd, usdOf, worstCaseCostOf, type ChatRequest } from '@gateway/contracts';
import type { ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['completion-worker'], env: { COMPLETION_CONCURRENCY: '16' } });

let gateways: ServiceProcess[] = [];
it.beforeAll(async ({ stack }) => {
  gateways = [stack.gateway, await stack.add('gateway'), await stack.add('gateway')];
});

/** $100 per million input tokens and $200 per million output: a request of a few words costs a few dollars' millionths. */
const price = { input: 100, output: 200 };
let seq = 0;

/** A chat of a few words through the openai SDK: its usage, or the error's status, code and message. */
async function chat(base: string, key: string, body: ChatRequest) {
  try {
    const reply = await new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 }).chat.completions.create(body as never);
    return { status: 200, usage: (reply as OpenAI.ChatCompletion).usage! };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    return { status: error.status ?? 0, code: (error.error as { code?: string } | undefined)?.code, message: (error.error as { message?: string } | undefined)?.message ?? '' };
  }
}

describe('a budget in money', () => {
  it("holds across three gateways: a burst spends past a key's budget by at most one request's worst case, then 429 says when it resets", async ({ stack, upstream, channel, apiKey }) => {
    const model = `budget-m${++seq}`;
    const mock = await upstream.openai();
    // Slow enough that the burst's requests are in flight together, holding their worst cases.
    mock.setBehaviour({ delayMs: 150 });
    await channel(mock, [model]);
    await stack.adminData('PUT', '/api/price/', { model, ...price });
    const maxBudget = 0.02;
    const { id, key } = await apiKey({ max_budget: maxBudget, budget_duration: 'daily' });
    const body: ChatRequest = { model, messages: [{ role: 'user', content: 'tell me three things' }], max_tokens: 20 };
    const worstCase = worstCaseCostOf(chatWorstCase(body), price);

    const burst = await Promise.all(Array.from({ length: 24 }, (_, i) => chat(gateways[i % 3]!.url, key, body)));
    const answered = burst.filter((r) => r.status === 200);
    const refused = burst.filter((r) => r.status !== 200);
    expect(answered.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    // Refused as held (retry when requests end) or spent: never anything else.
    for (const r of refused) expect(r).toMatchObject({ status: 429, code: expect.stringMatching(/^(rate_limited|insufficient_quota)$/) });

    // The rest of the budget, one request at a time, until it is spent.
    const later = [];
    for (let i = 0; i < 40; i++) {
      const r = await chat(gateways[i % 3]!.url, key, body);
      if (r.status !== 200) {
        expect(r).toMatchObject({ status: 429, code: 'insufficient_quota' });
        const tomorrow = new Date(periodEnd('daily')! * 1000).toISOString();
        expect(r.message).toBe(`this API key has spent its budget of $${maxBudget} for the day (UTC); it resets at ${tomorrow}`);
        break;
      }
      later.push(r);
    }
    const costs = [...answered, ...later].map((r) => costOf({ totalTokens: r.usage!.total_tokens, promptTokens: r.usage!.prompt_tokens, completionTokens: r.usage!.completion_tokens }, price));
    const spent = costs.reduce((a, b) => a + b, 0);
    const token = await stack.adminData('GET', `/api/token/${id}`);
    // Every answered request is charged its cost once, and nothing else.
    expect(Math.round(token.spend * 1e9)).toBe(spent);
    expect(token).toMatchObject({ max_budget: maxBudget, budget_duration: 'daily', budget_spend: token.spend, budget_resets_at: periodEnd('daily') });
    // Spent, past the budget by at most the worst case of one request.
    expect(spent).toBeGreaterThanOrEqual(maxBudget * 1e9);
    expect(spent - maxBudget * 1e9).toBeLessThanOrEqual(worstCase);
    // Only answered requests reached the upstream: a refusal costs nothing.
    expect(mock.requests).toHaveLength(answered.length + later.length);
  });

  it("a user's budget binds every key of the user, on every door: Anthropic's Messages door refuses in its own shape", async ({ stack, upstream, channel }) => {
    const model = `budget-u${++seq}`;
    const mock = await upstream.openai();
    await channel(mock, [model]);
    await stack.adminData('PUT', '/api/price/', { model, ...price });
    // $0.000001: one request's cost passes it.
    const user = await stack.adminData('POST', '/api/user/', { username: `budget${seq}`, password: 'budget-password', max_budget: 0.000001, budget_duration: 'none' });
    const first = await stack.adminData('POST', '/api/token/', { name: 'a', user_id: user.id, unlimited_quota: true });
    const second = await stack.adminData('POST', '/api/token/', { name: 'b', user_id: user.id, unlimited_quota: true });
    expect(await chat(stack.gateway.url, first.key, { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).toMatchObject({ status: 200 });
    const refused = await chat(gateways[1]!.url, second.key, { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    expect(refused).toMatchObject({ status: 429, code: 'insufficient_quota', message: 'your account has spent its budget of $0.000001; it does not reset; ask an administrator to raise it' });
    const anthropic = new Anthropic({ baseURL: gateways[2]!.url, apiKey: second.key, maxRetries: 0 });
    const error = await anthropic.messages.create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect((error as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', message: expect.stringContaining('spent its budget') } });
    const stored = await stack.adminData('GET', `/api/user/${user.id}`);
    expect(stored.spend).toBeGreaterThan(0.000001);
    expect(usdOf(Math.round(stored.spend * 1e9))).toBe(stored.budget_spend);
    expect(stored.budget_resets_at).toBeNull();

    // An administrator raises it: the user's keys work again at once.
    await stack.adminData('PUT', '/api/user/', { id: user.id, max_budget: 1 });
    expect(await chat(gateways[2]!.url, second.key, { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 })).toMatchObject({ status: 200 });
  });

  it('a user may lower its own key\'s budget, never raise, lift or re-period it', async ({ stack }) => {
    const user = await stack.adminData('POST', '/api/user/', { username: `budget${++seq}`, password: 'budget-password' });
    const login = await fetch(`${stack.gateway.url}/api/user/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: user.username, password: 'budget-password' }) });
    const { data: session } = await login.json() as { data: { access_token?: string } };
    const token = await stack.adminData('POST', '/api/token/', { name: 'own', user_id: user.id, unlimited_quota: true, max_budget: 5, budget_duration: 'monthly' });
    const put = (fields: Record<string, unknown>) => fetch(`${stack.gateway.url}/api/token/`, {
      method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${session.access_token}` }, body: JSON.stringify({ id: token.id, ...fields }),
    });
    expect((await put({ max_budget: 3 })).status).toBe(200);
    expect((await put({ max_budget: 4 })).status).toBe(403);
    expect((await put({ max_budget: 0 })).status).toBe(403);
    // Too small to store, it would be none: refused, not taken as a lowering.
    expect((await put({ max_budget: 1e-10 })).status).toBe(400);
    expect((await put({ budget_duration: 'daily' })).status).toBe(403);
    // LiteLLM's spelling of a period is taken, as an administrator writes it.
    expect((await stack.admin('PUT', '/api/token/', { id: token.id, budget_duration: '7d' })).status).toBe(200);
    expect((await stack.adminData('GET', `/api/token/${token.id}`)).budget_duration).toBe('weekly');
  });

  it('a caller with a budget is sent the output cap its hold assumes where a request names none, so no request spends past what it held', async ({ stack, upstream, channel, apiKey }) => {
    const model = `budget-cap${++seq}`;
    const mock = await upstream.openai();
    await channel(mock, [model]);
    await stack.adminData('PUT', '/api/price/', { model, ...price });
    const budgeted = await apiKey({ max_budget: 10, budget_duration: 'monthly' });
    const unbudgeted = await apiKey();
    const openai = (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const sentBody = () => mock.requests.at(-1)!.body as Record<string, unknown>;

    await openai(budgeted.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'no cap' }] });
    expect(sentBody()).toMatchObject({ max_completion_tokens: 4096 });
    // A cap the client named stands.
    await openai(budgeted.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'its own cap' }], max_tokens: 7 });
    expect(sentBody()).toMatchObject({ max_tokens: 7 });
    expect(sentBody().max_completion_tokens).toBeUndefined();
    // A key with no budget is sent as it asked: no cap.
    await openai(unbudgeted.key).chat.completions.create({ model, messages: [{ role: 'user', content: 'no cap' }] });
    expect(sentBody().max_completion_tokens).toBeUndefined();
    // The Responses door the same (its max_output_tokens, translated to chat's max_tokens for this channel).
    await openai(budgeted.key).responses.create({ model, input: 'no cap', store: false });
    expect(sentBody()).toMatchObject({ max_tokens: 4096 });
    await openai(unbudgeted.key).responses.create({ model, input: 'no cap', store: false });
    expect(sentBody().max_tokens).toBeUndefined();
  });
});

