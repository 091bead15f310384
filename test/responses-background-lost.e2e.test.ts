/**
 * A background response whose gateway is killed mid-run: the run renews a lease on its stored
 * response while it lives, so a GET on any other gateway, once the lease is stale, finds it
 * `failed` with an error that says its run was lost, instead of `in_progress` forever; a run
 * that lives longer than the lease's window keeps renewing it and completes.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '60000' },
  channelDefaults: { timeout_ms: 10_000 },
});

const client = (url: string, key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });

describe('a gateway killed with SIGKILL while it runs a background response', () => {
  it('leaves the response failed, saying so, for a GET on another gateway; a run outliving the lease window still completes', { timeout: 120_000 }, async ({ stack, upstream, channel, apiKey }) => {
    // Twenty words a second apart: each run lasts twice the lease's 10 s window.
    const text = 'a b c d e f g h i j k l m n o p q r s t';
    const mock = await upstream.openai({ text, chunkDelayMs: 1000 });
    await channel(mock, ['slow-model']);
    const { key } = await apiKey();
    const doomed = await stack.add('gateway');
    const survivor = client(stack.gateway.url, key);

    const lost = await client(doomed.url, key).responses.create({ model: 'slow-model', input: 'Work slowly.', background: true });
    const lives = await survivor.responses.create({ model: 'slow-model', input: 'Work slowly too.', background: true });
    await expect.poll(async () => (await survivor.responses.retrieve(lost.id)).status, { timeout: 20_000, interval: 200 }).toBe('in_progress');
    await doomed.stop('SIGKILL');

    // Still in progress as the lease runs out; then failed, read from the surviving gateway.
    expect((await survivor.responses.retrieve(lost.id)).status).toBe('in_progress');
    await expect.poll(async () => (await survivor.responses.retrieve(lost.id)).status, { timeout: 30_000, interval: 500 }).toBe('failed');
    const failed = await survivor.responses.retrieve(lost.id);
    expect(failed).toMatchObject({ id: lost.id, background: true, error: { code: 'server_error', message: expect.stringMatching(/gateway running this background response stopped before it ended/) } });
    // Ended for good: a cancel is refused as for any ended response.
    await expect(survivor.responses.cancel(lost.id)).rejects.toThrow(/Cannot cancel a response with status 'failed'/);

    // Read again and again past the window while it runs: its lease renewed, it is never taken for lost.
    expect((await survivor.responses.retrieve(lives.id)).status).toBe('in_progress');
    await expect.poll(async () => (await survivor.responses.retrieve(lives.id)).status, { timeout: 40_000, interval: 500 }).toBe('completed');
    expect((await survivor.responses.retrieve(lives.id)).output_text).toBe(text);
  });
});
