/**
 * What a stream cut short by its client is charged, end to end (real Redis, gateway and worker
 * processes, the OpenAI SDK, a mock upstream whose usage event comes a moment after its text):
 * the upstream's own usage when it comes within the grace, else the estimate of what was sent.
 */
import OpenAI from 'openai';
import { describe, expect } from 'vitest';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['completion-worker'] });

const WORDS = 800;
const TEXT = Array.from({ length: WORDS }, (_, i) => `w${i}`).join(' ');

describe('a stream its client leaves', () => {
  // [test, ms from the last text to the usage event, words the client reads before it leaves, charged by usage]
  for (const [name, usageDelayMs, cutAfter, chargedByUsage] of [
    ['is charged the upstream\'s usage when it comes shortly after the cut (500 ms after the last text)', 500, WORDS, true],
    ['is charged the upstream\'s usage when the client leaves mid-stream and the rest and the usage follow', 300, 100, true],
    ['is charged by estimate when the usage comes after the grace', 4000, WORDS, false],
  ] as const) {
    it(name, async ({ stack, upstream, channel, apiKey }) => {
      const mock = await upstream.openai({ text: TEXT, usageDelayMs });
      await channel(mock, ['cut-stream']);
      const { id, key } = await apiKey();
      const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
      const controller = new AbortController();
      const stream = await client.completions.create({ model: 'cut-stream', prompt: 'hello', stream: true }, { signal: controller.signal });
      let words = 0;
      try {
        for await (const chunk of stream) {
          if (chunk.choices[0]?.text) words++;
          // The client leaves before the usage event.
          if (words === cutAfter) {
            controller.abort();
            break;
          }
        }
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      }
      expect(words).toBe(cutAfter);
      const used = async () => (await stack.admin('GET', `/api/token/${id}`)).body.data.used_quota as number;
      const upstreamUsage = 1 + WORDS; // the mock counts words: one in the prompt, 800 in the text
      if (chargedByUsage) {
        await expect.poll(used, { timeout: 5000 }).toBe(upstreamUsage);
      } else {
        await expect.poll(used, { timeout: 8000 }).toBeGreaterThan(0);
        expect(await used()).not.toBe(upstreamUsage);
      }
      await mock.waitFor((m) => m.inFlight === 0, 8000);
    }, 20_000);
  }

  it('is charged, by estimate, the whole prompt its hold counted (tools included), not only its messages\' text', async ({ stack, upstream, channel, apiKey }) => {
    // Its usage comes after the grace: the charge is the estimate. Before, a chat of one "hi" and
    // 100 tools (about 200 KB) cut after its first chunk was charged 7 tokens; read to its end, 51,658.
    const mock = await upstream.openai({ text: TEXT, usageDelayMs: 4000 });
    await channel(mock, ['cut-chat']);
    const { id, key } = await apiKey();
    const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const tools = Array.from({ length: 100 }, (_, i) => ({
      type: 'function' as const,
      function: { name: `tool_${i}`, description: 'd'.repeat(2000), parameters: { type: 'object', properties: {} } },
    }));
    const toolsChars = JSON.stringify(tools).length;
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ model: 'cut-chat', messages: [{ role: 'user', content: 'hi' }], tools, max_tokens: 50, stream: true }, { signal: controller.signal });
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta?.content) {
          controller.abort();
          break;
        }
      }
    } catch (error) {
      if (!controller.signal.aborted) throw error;
    }
    const used = async () => (await stack.admin('GET', `/api/token/${id}`)).body.data.used_quota as number;
    await expect.poll(used, { timeout: 8000 }).toBeGreaterThan(0);
    // Four characters a token, the estimate's rule, of the tools alone.
    expect(await used()).toBeGreaterThanOrEqual(Math.floor(toolsChars / 4));
    await mock.waitFor((m) => m.inFlight === 0, 8000);
  }, 20_000);
});
