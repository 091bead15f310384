/**
 * What one tenant's requests can do to the shared completion worker, end to end (real Redis,
 * gateway and worker processes, a mock upstream): many large replies at once go out as entries
 * of at most 8 Mi characters (replies that together passed V8's largest string in one turn killed
 * it: the reply path's unit test shows the bound), and a request that takes its worker down (killed under it twice)
 * ends with an error instead of being run again after every restart.
 */
import { describe, expect, onTestFailed } from 'vitest';
import type { ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ database: true, workers: ['completion-worker'], env: { REQUEST_TIMEOUT_MS: '300000' }, channelDefaults: { timeout_ms: 300_000 } });

const completionWorker = (services: ServiceProcess[]) => services.filter((s) => s.name === 'completion-worker' && s.child.exitCode === null && s.child.signalCode === null).at(-1)!;

describe('many large replies at once', () => {
  for (const [count, mb] of [[3, 40], [24, 3]] as const) it(`are all answered, the worker alive: ${count} whole replies of ${mb} MB`, async ({ stack, upstream, channel, apiKey }) => {
    // One word: the mock counts words, and millions of them would be its own work, not the test's.
    const text = 'x'.repeat(mb * 1024 * 1024);
    const mock = await upstream.openai({ text });
    await channel(mock, [`big-${count}`]);
    const { key } = await apiKey();
    const worker = completionWorker(stack.services);
    // A worker that died says why: its last lines.
    onTestFailed(() => console.log(`[survival] the worker (exit ${worker.child.exitCode ?? worker.child.signalCode}) last said:\n${worker.output.slice(-30).join('\n')}`));
    const started = Date.now();
    // Before, the replies that came in one turn went out as one XADD: past 512 Mi characters,
    // ioredis threw from an Immediate and the worker died (2 of 3 runs with 16 to 32 of 41.5 MB).
    const lengths = await Promise.all(Array.from({ length: count }, async () => {
      const answer = await fetch(`${stack.gateway.url}/v1/completions`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: `big-${count}`, prompt: 'hi' }),
      });
      const body = await answer.text();
      expect(answer.status, body.slice(0, 300)).toBe(200);
      return (JSON.parse(body) as { choices: { text: string }[] }).choices[0]!.text.length;
    }));
    console.log(`[survival] ${count} replies of ${mb} MB answered in ${Date.now() - started} ms`);
    expect(lengths).toEqual(Array.from({ length: count }, () => text.length));
    // Each called once: a worker that stalled past its jobs' locks (a loaded machine) ran them again, and died.
    expect(mock.requests.length).toBe(count);
    expect(worker.child.exitCode).toBeNull();
    expect(worker.logs.filter((l) => /RangeError|uncaught/i.test(JSON.stringify(l)))).toEqual([]);
  }, 600_000);
});

describe('a request whose worker dies under it', () => {
  it('is run again once, and ends with a clear 500 when its worker dies a second time, not run a third', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ hang: true });
    await channel(mock, ['killer']);
    const { key } = await apiKey();
    const answer = fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'killed-twice' },
      body: JSON.stringify({ model: 'killer', prompt: 'hi' }),
    }).then(async (r) => ({ status: r.status, body: await r.json() as { error: { message: string } }, at: Date.now() }));
    for (let run = 1; run <= 2; run++) {
      await mock.waitFor((m) => m.requests.length >= run, 60_000);
      await completionWorker(stack.services).stop('SIGKILL');
      await stack.add('completion-worker');
    }
    const killedAt = Date.now();
    // Before, it was failed unrun, unanswered: its client waited for REQUEST_TIMEOUT_MS (a batch
    // line was sent again, and killed the worker again).
    const { status, body, at } = await answer;
    console.log(`[survival] answered ${at - killedAt} ms after the second kill: ${status} ${body.error.message}`);
    expect(status).toBe(500);
    expect(body.error.message).toMatch(/worker process died .*, twice; it is not run again/);
    expect(at - killedAt).toBeLessThan(60_000);
    expect(mock.requests.length).toBe(2);
    // And the request log has its row, with the error its client got.
    await expect.poll(async () => (await stack.admin('GET', '/api/log/?request_id=killed-twice')).body.data?.items?.[0], { timeout: 30_000 })
      .toMatchObject({ request_id: 'killed-twice', status: 500 });
  }, 240_000);
});
