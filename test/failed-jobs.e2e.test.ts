/**
 * A job that fails keeps no payload in Redis, end to end (real Redis, gateway and worker
 * processes, a mock upstream that never answers): its worker killed twice with SIGKILL, the job
 * stalls twice and BullMQ fails it; it stays in the failed set a while, for the queue dashboard,
 * but its 1 MB prompt must not stay behind, neither in the job nor beside it (a payload past
 * 64 KiB is kept apart from its job).
 */
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['completion-worker'], env: { REQUEST_TIMEOUT_MS: '60000' } });

it('keeps no payload of a job that failed as stalled', async ({ stack, upstream, channel, apiKey }) => {
  const mock = await upstream.openai({ hang: true });
  await channel(mock, ['stall']);
  const { key } = await apiKey();
  const redis = new Redis(stack.redis.url);
  try {
    const marker = 'stalled-payload-';
    const prompt = marker + 'p'.repeat(1024 * 1024);
    const sent = fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'stall', prompt }),
    }).then((r) => r.status, () => 0);

    /**
     * Keys whose value holds the prompt: the job's hash, wherever BullMQ keeps it, or the list a
     * large payload is kept in beside its job.
     */
    const holding = async () => {
      const found: string[] = [];
      for (const k of await redis.keys('*')) {
        const type = await redis.type(k);
        // A payload beside its job is a list of slices; the prompt is in whichever slices hold the request.
        const data = type === 'hash' ? await redis.hget(k, 'data') : type === 'list' ? (await redis.lrange(k, 0, -1)).join('') : null;
        if (data?.includes(marker)) found.push(k);
      }
      return found;
    };
    // Held while it waits and runs: the job is there.
    await mock.waitFor((m) => m.requests.length === 1, 20_000);
    expect(await holding()).toHaveLength(1);
    // Its worker killed twice while running it: the second stall fails it.
    for (let round = 1; round <= 2; round++) {
      await mock.waitFor((m) => m.requests.length === round && m.inFlight === 1, 30_000);
      const running = stack.services.filter((s) => s.name === 'completion-worker' && s.child.exitCode === null);
      await Promise.all(running.map((w) => w.stop('SIGKILL')));
      await stack.add('completion-worker');
    }
    await expect.poll(async () => (await redis.zcard('{gw}:completion:failed')) === 1 && (await holding()).length === 0, { timeout: 30_000, interval: 500 }).toBe(true);
    // The upstream was asked twice, never a third time: the job failed, it was not run again.
    expect(mock.requests).toHaveLength(2);
    void sent;
  } finally {
    redis.disconnect();
  }
}, 90_000);
