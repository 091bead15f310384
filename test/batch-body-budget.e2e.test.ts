/**
 * A batch's lines are held in the user's body budget (BODY_BUDGET_PER_USER_BYTES) with its live
 * requests, on every gateway and batch worker together: the lines' payloads in Redis stay within
 * it, the batch waiting for room rather than filling Redis (one batch kept 235 MB of payloads,
 * two 484 MB, against 64 MiB, until Redis refused commands at maxmemory). Real processes, Redis
 * and PostgreSQL.
 */
import { describe, expect, onTestFinished } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { Redis } from 'ioredis';
import { stackTest } from '@gateway/testkit/fixtures';
import type { Stack } from '@gateway/testkit';

const BUDGET = 4 * 1024 * 1024;
const LINE_CHARS = 96 * 1024;
const it = stackTest({
  database: true, workers: ['completion-worker', 'batch-worker'], channelDefaults: { timeout_ms: 30_000 },
  env: { BODY_BUDGET_PER_USER_BYTES: String(BUDGET), BATCH_WINDOW: '128', BATCH_USER_BATCHES: '2' },
});

let seq = 0;
const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `bb${++seq}`, password: 'budget-password' });
  const { key } = await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true });
  return { userId: user.id as number, key, openai: new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 120_000 }) };
}

/** What every holder of the user's body budget holds now (the shared counter in Redis). */
async function heldFor(redis: Redis, userId: number): Promise<number> {
  const fields = await redis.hgetall(`gw:body:{${userId}}`);
  return Object.entries(fields).reduce((sum, [field, value]) => (field.endsWith(':t') ? sum : sum + Number(value)), 0);
}

const usedMemory = async (redis: Redis) => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);

describe("a batch's lines in the user's body budget", () => {
  it('keeps the payloads of one batch, then two at once beside a live burst, within the budget in Redis', async ({ stack, upstream, channel }) => {
    const mock = await upstream.openai({ delayMs: 1000, text: 'ok' });
    const model = `bodies-${++seq}`;
    await channel(mock, [model]);
    const { userId, key, openai } = await tenant(stack);
    const redis = new Redis(stack.redis.url);
    onTestFinished(() => redis.disconnect());
    const lines = Array.from({ length: 120 }, (_, i) => ({ custom_id: `l-${i}`, method: 'POST', url: '/v1/completions', body: { model, prompt: 'x'.repeat(LINE_CHARS), max_tokens: 1 } }));
    const file = await openai.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'big.jsonl'), purpose: 'batch' });
    const run = async (batches: number, beside?: () => Promise<number[]>) => {
      const baseline = await usedMemory(redis);
      let peakHeld = 0;
      let peakMemory = baseline;
      const sampler = setInterval(() => {
        void heldFor(redis, userId).then((held) => { peakHeld = Math.max(peakHeld, held); });
        void usedMemory(redis).then((used) => { peakMemory = Math.max(peakMemory, used); });
      }, 100);
      try {
        const created = await Promise.all(Array.from({ length: batches }, () => openai.batches.create({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' })));
        const live = beside ? await beside() : [];
        for (const batch of created) {
          await expect.poll(async () => (await openai.batches.retrieve(batch.id)).status, { timeout: 180_000, interval: 500 }).toBe('completed');
          expect((await openai.batches.retrieve(batch.id)).request_counts).toEqual({ total: 120, completed: 120, failed: 0 });
        }
        return { peakHeld, grown: peakMemory - baseline, live };
      } finally {
        clearInterval(sampler);
      }
    };

    const one = await run(1);
    console.log(`[batch bodies] one batch of 120 lines of 96 KB: budget counter peak ${(one.peakHeld / 1048576).toFixed(2)} MiB, Redis used_memory +${(one.grown / 1048576).toFixed(1)} MB (budget ${BUDGET / 1048576} MiB)`);
    expect(one.peakHeld).toBeGreaterThan(0);
    expect(one.peakHeld).toBeLessThanOrEqual(BUDGET);
    expect(one.grown).toBeLessThan(2 * BUDGET);

    // Variant: two batches of the user's at once, and a burst of its live requests beside them:
    // the live ones are served or told to wait (429, Retry-After), never past the budget.
    const two = await run(2, async () => {
      await expect.poll(() => heldFor(redis, userId), { timeout: 30_000, interval: 100 }).toBeGreaterThan(BUDGET / 2);
      const body = JSON.stringify({ model, prompt: 'y'.repeat(200 * 1024), max_tokens: 1 });
      return Promise.all(Array.from({ length: 20 }, async () => {
        const answer = await fetch(`${stack.gateway.url}/v1/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
        if (answer.status === 429) expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
        await answer.arrayBuffer();
        return answer.status;
      }));
    });
    const served = two.live.filter((s) => s === 200).length;
    console.log(`[batch bodies] two batches and 20 live requests of 200 KB: budget counter peak ${(two.peakHeld / 1048576).toFixed(2)} MiB, Redis used_memory +${(two.grown / 1048576).toFixed(1)} MB; live: ${served} served, ${two.live.length - served} refused 429`);
    expect(two.live.every((s) => s === 200 || s === 429)).toBe(true);
    expect(served, 'a quarter of the budget is left to live requests').toBeGreaterThan(0);
    expect(two.peakHeld).toBeLessThanOrEqual(BUDGET + 200 * 1024 + 1024);
    expect(two.grown).toBeLessThan(2 * BUDGET);
    await expect.poll(() => heldFor(redis, userId), { timeout: 10_000 }).toBe(0);
  }, 400_000);
});
