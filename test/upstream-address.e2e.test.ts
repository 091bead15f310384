/**
 * Where a channel may point, judged on the address a connection reaches, not on how it is
 * spelled: the gateway refuses a base_url that names its own Redis in any spelling, and the
 * model worker refuses at connect time, with the port, a channel that got past (written to the
 * store before the rule, or a name that resolves elsewhere later). Real processes.
 */
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { ChannelKeyCipher, createStore } from '@gateway/store';
import { postJson, TEST_SECRET_KEY } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const test = stackTest({ workers: ['completion-worker'], env: { REQUEST_TIMEOUT_MS: '8000' } });

const spellingsOf = (port: string) => [
  `http://[::ffff:127.0.0.1]:${port}`, `http://[::ffff:7f00:1]:${port}`, `http://localhost.:${port}`, `http://LOCALHOST..:${port}`,
  `http://2130706433:${port}`, `http://0x7f000001:${port}`, `http://0177.0.0.1:${port}`, `http://127.1:${port}`,
  `http://[::127.0.0.1]:${port}`, `http://[0:0:0:0:0:ffff:7f00:1]:${port}`, `http://sub.localhost:${port}`,
];

test("the gateway refuses its own Redis under any spelling of a loopback address", async ({ stack }) => {
  const port = new URL(stack.redis.url).port;
  for (const base_url of [...spellingsOf(port), `http://0.0.0.0:${port}`, `http://[::]:${port}`]) {
    const answer = await stack.admin('POST', '/api/channel/', { name: 'c', type: 'openai', key: 'sk-up', base_url, models: ['m'] });
    expect(answer.status, base_url).toBe(400);
    expect(answer.body.message, base_url).toMatch(/own Redis|unspecified/);
  }
});

test('the model worker refuses to connect to its Redis, however the channel spells it', async ({ stack, apiKey }) => {
  const port = new URL(stack.redis.url).port;
  const redis = new Redis(stack.redis.url);
  try {
    // Channels written straight to the store, as if set before the rule or by a name that
    // resolved elsewhere when it was set: only the worker's connect-time check stands in the way.
    const store = createStore(redis);
    const cipher = new ChannelKeyCipher(Buffer.from(TEST_SECRET_KEY, 'base64'));
    const spellings = [`http://[::ffff:7f00:1]:${port}`, `http://localhost.:${port}`, `http://127.0.0.1:${port}`];
    for (const [i, base_url] of spellings.entries()) {
      await store.channels.create({ name: `sneaky-${i}`, type: 'openai', key: cipher.encrypt('sk-up'), base_url, models: [`sneaky-${i}`], timeout_ms: 3000 });
    }
    const { key } = await apiKey();
    const connections = async () => Number(/total_connections_received:(\d+)/.exec(await redis.info('stats'))![1]);
    for (const [i, base_url] of spellings.entries()) {
      const before = await connections();
      const answer = await postJson(`${stack.gateway.url}/v1/completions`, { model: `sneaky-${i}`, prompt: 'FLUSHALL' }, { authorization: `Bearer ${key}` });
      expect(answer.status, base_url).toBeGreaterThanOrEqual(500);
      // Not one connection reached Redis from the worker's upstream call.
      expect(await connections(), base_url).toBe(before);
    }
  } finally {
    redis.disconnect();
  }
});
