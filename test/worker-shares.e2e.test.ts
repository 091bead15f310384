/**
 * A worker's running slots shared between tenants (issue 40), end to end: real Redis, gateway,
 * completion and audio workers at their default concurrency, mock upstreams. One tenant's long
 * requests past every slot of a worker no longer keep another tenant's quick request waiting for
 * one of them to end.
 */
import { describe, expect } from 'vitest';
import type { MockOpenAIUpstream, Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '120000' },
  channelDefaults: { timeout_ms: 120_000 },
});

let seq = 0;

/** A user of its own with a key, so that its requests are its own tenant's. */
async function tenant(stack: Stack) {
  const user = await stack.adminData('POST', '/api/user/', { username: `share-${++seq}`, password: 'tenant-password' });
  return (await stack.adminData('POST', '/api/token/', { name: 'k', user_id: user.id, unlimited_quota: true })).key as string;
}

const post = (stack: Stack, key: string, path: string, body: unknown, signal?: AbortSignal, gateway = stack.gateway.url) => fetch(`${gateway}${path}`, {
  method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal,
}).then(async (r) => ({ status: r.status, bytes: (await r.arrayBuffer()).byteLength }), () => ({ status: 0, bytes: 0 }));

/**
 * Tenant A sends `count` requests to a 30 s upstream (more than the worker's slots) and holds
 * every slot; then tenant B's request to a quick upstream: its latency, in ms.
 */
async function besideHog(stack: Stack, slow: MockOpenAIUpstream, slots: number, count: number, hogRequest: [string, unknown], quickRequest: [string, unknown], otherGateway?: string) {
  const what = `another tenant's ${quickRequest[0]} beside ${count} long requests on ${slots} slots`;
  const [hogKey, otherKey] = [await tenant(stack), await tenant(stack)];
  const stop = new AbortController();
  const hog = Array.from({ length: count }, () => post(stack, hogKey, hogRequest[0], hogRequest[1], stop.signal));
  try {
    await expect.poll(() => slow.inFlight, { timeout: 60_000, interval: 200 }).toBe(slots);
    const started = performance.now();
    const quick = await post(stack, otherKey, quickRequest[0], quickRequest[1], undefined, otherGateway);
    const ms = performance.now() - started;
    console.log(`[shares] ${what}: ${Math.round(ms)} ms`);
    expect(quick.status).toBe(200);
    // The hog's jobs past its share wait; those running go on.
    expect(slow.inFlight).toBeGreaterThanOrEqual(slots - 1);
    return ms;
  } finally {
    stop.abort();
    await Promise.all(hog);
  }
}

describe("a worker's slots", () => {
  it("let another tenant's quick completion through while one tenant's 300 long requests hold all 256 of the completion worker's", async ({ stack, upstream, channel }) => {
    const slow = await upstream.openai({ delayMs: 30_000 });
    const quick = await upstream.openai();
    await channel(slow, ['share-slow']);
    await channel(quick, ['share-quick']);
    const ms = await besideHog(stack, slow, 256, 300,
      ['/v1/completions', { model: 'share-slow', prompt: 'hi' }],
      ['/v1/completions', { model: 'share-quick', prompt: 'hi' }]);
    // Before, it waited for one of the long requests to end: 27.1 s.
    expect(ms).toBeLessThan(5_000);
  }, 180_000);

  it("let another tenant's short speech through while one tenant's 20 long speeches hold all 16 of the audio worker's", async ({ stack, upstream, channel }) => {
    const slow = await upstream.openai({ delayMs: 30_000 });
    const quick = await upstream.openai();
    await channel(slow, ['share-slow-tts']);
    await channel(quick, ['share-quick-tts']);
    const speech = (model: string, input: string) => ['/v1/audio/speech', { model, input, voice: 'alloy', response_format: 'mp3' }] as [string, unknown];
    const ms = await besideHog(stack, slow, 16, 20, speech('share-slow-tts', 'a long speech '.repeat(20)), speech('share-quick-tts', 'hi'));
    // Before: 30 to 55 s.
    expect(ms).toBeLessThan(5_000);
  }, 180_000);

  it('hold across two completion workers and two gateways: 520 long requests through one, a quick one through the other', async ({ stack, upstream, channel }) => {
    const slow = await upstream.openai({ delayMs: 30_000 });
    const quick = await upstream.openai();
    await channel(slow, ['share-slow-2']);
    await channel(quick, ['share-quick-2']);
    await stack.add('completion-worker');
    const second = await stack.add('gateway');
    const ms = await besideHog(stack, slow, 512, 520,
      ['/v1/completions', { model: 'share-slow-2', prompt: 'hi' }],
      ['/v1/completions', { model: 'share-quick-2', prompt: 'hi' }], second.url);
    expect(ms).toBeLessThan(5_000);
  }, 240_000);
});
