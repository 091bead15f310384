/**
 * A completion worker killed with SIGKILL mid-job, with every job kept for the queue board
 * (QUEUE_BOARD_KEEP_ONE_IN=1): its jobs are run again by another worker with their whole
 * request (a prompt inline in its job, and one stored beside it), answered once, and only once
 * completed kept on the board without their prompt. Real Redis, PostgreSQL, gateway and worker
 * processes, a mock upstream.
 */
import { describe, expect } from 'vitest';
import { Redis } from 'ioredis';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ database: true, workers: [] });

describe('a completion worker killed with SIGKILL mid-job, every job kept for the board', () => {
  it('has its jobs run again elsewhere with their whole request, and kept on the board without their prompt once completed', async ({ stack, upstream, channel, apiKey }) => {
    const gateway = await stack.add('gateway', { QUEUE_BOARD_KEEP_ONE_IN: '1' });
    const victim = await stack.add('completion-worker');
    const mock = await upstream.openai({ delayMs: 3000 });
    await channel(mock, ['rerun']);
    const { key } = await apiKey();
    // One prompt in its job, one stored beside it (past the 64 KiB kept inline).
    const prompts = { small: 'the small private prompt', large: `the large private prompt ${'x'.repeat(70 * 1024)}` };
    const ask = (name: keyof typeof prompts) => fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': `rerun-${name}` },
      body: JSON.stringify({ model: 'rerun', prompt: prompts[name] }),
    }).then((r) => r.status);
    const answers = Promise.all([ask('small'), ask('large')]);
    await expect.poll(() => mock.inFlight, { timeout: 20_000 }).toBe(2);
    await victim.stop('SIGKILL');
    mock.setBehaviour({ delayMs: 100 });
    await stack.add('completion-worker');

    // Run again once their locks lapse (5 to 7.5 s), with the same prompts, and answered once.
    expect(await answers).toEqual([200, 200]);
    const received = mock.requests.map((r) => r.body.prompt);
    expect(received.filter((p) => p === prompts.small)).toHaveLength(2);
    expect(received.filter((p) => p === prompts.large)).toHaveLength(2);

    const redis = new Redis(stack.redis.url);
    try {
      for (const name of ['small', 'large'] as const) {
        const row = await loggedRow(stack, `rerun-${name}`);
        expect(row).toMatchObject({ status: 200 });
        // Completed, and kept with who asked and what, not the prompt (nor its payload's key).
        const job = `{gw}:completion:${row.job_id}`;
        await expect.poll(() => redis.hget(job, 'finishedOn'), { timeout: 10_000 }).toBeTruthy();
        await expect.poll(async () => String(await redis.hget(job, 'data')), { timeout: 10_000 }).not.toMatch(/private prompt|payloadKey/);
        expect(JSON.parse((await redis.hget(job, 'data'))!)).toMatchObject({ requestId: `rerun-${name}` });
      }
    } finally {
      redis.disconnect();
    }
  }, 120_000);
});
