/**
 * Chat completions served by Anthropic channels end to end: real Redis, admin-worker,
 * completion-worker and gateway processes, a mock of Anthropic's Messages API over real HTTP,
 * and the `openai` SDK and the Vercel AI SDK as clients. The gateway speaks OpenAI to clients
 * and Anthropic to the upstream; failover crosses channel types.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { jsonSchema, streamText, tool } from 'ai';
import { caught } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';
import { Redis } from 'ioredis';
import { routingKeys } from '@gateway/routing';

const it = stackTest({
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '20000', CHANNEL_FAILURES_BEFORE_COOLDOWN: '3' },
  channelDefaults: { timeout_ms: 5000 },
})
  .extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 }));

let seq = 0;
const uniqueModel = () => `claude-alias-${++seq}`;

const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

describe('chat from an anthropic channel', () => {
  it('translates a whole exchange both ways: system, the channel\'s model and key, usage charged', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic({ text: 'Bonjour from Claude' });
    const model = uniqueModel();
    await channel(mock, ['claude-upstream'], { model_mapping: { [model]: 'claude-upstream' }, key: 'sk-ant-channel-key' });
    const key = await apiKey();
    const reply = await client(key.key).chat.completions.create({
      model, messages: [{ role: 'system', content: 'Answer in French.' }, { role: 'user', content: 'Say hello' }], max_tokens: 50,
    });
    expect(reply).toMatchObject({ object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: 'Bonjour from Claude' }, finish_reason: 'stop' }] });
    expect(reply.usage!.total_tokens).toBe(reply.usage!.prompt_tokens + reply.usage!.completion_tokens);
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.apiKey).toBe('sk-ant-channel-key');
    expect(sent.anthropicVersion).toBe('2023-06-01');
    expect(sent.body).toMatchObject({ model: 'claude-upstream', system: [{ type: 'text', text: 'Answer in French.' }], max_tokens: 50, messages: [{ role: 'user' }] });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(reply.usage!.total_tokens);
  });

  it('streams a tool call as OpenAI chunks, with usage last, and takes the tool result back', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const stream = await client(key).chat.completions.create({ model, messages, tools: [weatherTool], stream: true, stream_options: { include_usage: true } });
    const calls = new Map<number, { id: string; name: string; args: string }>();
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        for (const call of choice.delta.tool_calls ?? []) {
          const entry = calls.get(call.index) ?? { id: '', name: '', args: '' };
          entry.id ||= call.id ?? '';
          entry.name += call.function?.name ?? '';
          entry.args += call.function?.arguments ?? '';
          calls.set(call.index, entry);
        }
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(finish).toBe('tool_calls');
    expect(calls.size).toBe(1);
    const call = calls.get(0)!;
    expect(call.name).toBe('get_weather');
    expect(Object.keys(JSON.parse(call.args)).length).toBeGreaterThan(0);
    expect(usage?.total_tokens).toBeGreaterThan(0);

    // The tool's answer goes back as a tool message: Anthropic gets a tool_result block.
    const answer = await client(key).chat.completions.create({
      model, tools: [weatherTool],
      messages: [...messages, { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.args } }] }, { role: 'tool', tool_call_id: call.id, content: 'Sunny, 21 °C' }],
    });
    expect(answer.choices[0]!.message.content).toBeTruthy();
    const sent = mock.requests.at(-1)!.body as { messages: { role: string; content: { type: string; tool_use_id?: string; id?: string }[] }[] };
    expect(sent.messages.at(-2)!.content.some((b) => b.type === 'tool_use' && b.id === call.id)).toBe(true);
    expect(sent.messages.at(-1)!.content.some((b) => b.type === 'tool_result' && b.tool_use_id === call.id)).toBe(true);
  });

  it('streams through the Vercel AI SDK with a tool call', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });
    const streamed = streamText({
      model: provider.chat(model),
      prompt: 'What is the weather in Paris?',
      tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }) }) },
      maxRetries: 0,
    });
    const calls = await streamed.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]!.toolName).toBe('get_weather');
    expect(await streamed.finishReason).toBe('tool-calls');
  });

  it("answers Anthropic's refusals in OpenAI's shape: a 400 relayed, a 429 waited out", async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    // n > 1 cannot be served by Anthropic: refused before any call, naming the field.
    const refused = await caught(client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], n: 2 }));
    expect(refused).toMatchObject({ status: 400 });
    expect(refused.error).toMatchObject({ param: 'n' });
    expect(mock.requests).toHaveLength(0);
    // One 429 with retry-after 1: the request waits and succeeds.
    mock.next({ status: 429, retryAfter: 1 });
    const reply = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] });
    expect(reply.choices[0]!.finish_reason).toBe('stop');
    expect(mock.requests).toHaveLength(2);
  });

  it("counts an error event for a stream's own input as nothing against the channel, and an overload as a failure", async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    const made = await channel(mock, [model]);
    const { key } = await apiKey();
    const health = async () => {
      const redis = new Redis(stack.redis.url);
      try {
        return await redis.hget(routingKeys.health(made.id), 'failures');
      } finally {
        redis.disconnect();
      }
    };
    const cut = async () => {
      const stream = await client(key).chat.completions.create({ model, messages: [{ role: 'user', content: 'tell me a story' }], stream: true });
      return (async () => { for await (const _ of stream) { /* read on */ } })().then(() => 'ended', () => 'cut');
    };
    mock.next({ streamError: { afterEvents: 3, type: 'invalid_request_error', message: 'the input was refused' } });
    expect(await cut()).toBe('cut');
    expect(await health()).toBeNull();
    mock.next({ streamError: { afterEvents: 3, type: 'overloaded_error' } });
    expect(await cut()).toBe('cut');
    expect(await health()).toBe('1');
  });
});

describe('failover across channel types', () => {
  it('moves a burst from an overloaded anthropic channel to an openai one for the same alias, each within its max_concurrency', async ({ upstream, channel, apiKey, client }) => {
    const anthropic = await upstream.anthropic({ delayMs: 50 });
    const openai = await upstream.openai({ delayMs: 50, text: 'from openai' });
    const model = uniqueModel();
    await channel(anthropic, ['claude-x'], { model_mapping: { [model]: 'claude-x' }, priority: 10, max_concurrency: 4 });
    await channel(openai, ['gpt-x'], { model_mapping: { [model]: 'gpt-x' }, priority: 0, max_concurrency: 4 });
    const { key } = await apiKey();
    // Every call to the anthropic channel fails as overloaded (529) from the 5th on.
    anthropic.next({}, {}, {}, {});
    anthropic.setBehaviour({ status: 529 });
    const replies = await Promise.all(Array.from({ length: 24 }, (_, i) =>
      client(key).chat.completions.create({ model, messages: [{ role: 'user', content: `hello ${i}` }] })));
    expect(replies.every((r) => r.choices[0]!.message.content)).toBe(true);
    const fromOpenAI = replies.filter((r) => r.choices[0]!.message.content === 'from openai').length;
    expect(fromOpenAI).toBeGreaterThan(0);
    expect(fromOpenAI).toBeLessThan(24);
    expect(anthropic.maxInFlight).toBeLessThanOrEqual(4);
    expect(openai.maxInFlight).toBeLessThanOrEqual(4);
    expect(openai.requests[0]!.body.model).toBe('gpt-x');
  });
});
