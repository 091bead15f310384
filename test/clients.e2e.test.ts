/**
 * Today's client libraries through the gateway's doors, with nothing changed but the base URL and
 * key: LangChain.js `ChatOpenAI` with `useResponsesApi` (the Responses door) and `ChatAnthropic`
 * (the Messages door), the Vercel AI SDK's `@ai-sdk/anthropic` (Messages), and `@google/genai` 2.x
 * (Gemini's door), each on channels of its own format and of another. Real Redis, PostgreSQL,
 * completion-worker and gateway processes, the test kit's mock upstreams over real HTTP: each test
 * checks the answer the user reads, a tool's result going back to the upstream, and the request
 * log's route and tokens.
 */
import { describe, expect } from 'vitest';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { HumanMessage, ToolMessage, type AIMessage } from '@langchain/core/messages';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { GoogleGenAI as GoogleGenAI2 } from 'google-genai-2';
import type { MockAnthropicUpstream, MockOpenAIUpstream } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
});

let seq = 0;
const uniqueModel = () => `clients-model-${++seq}`;

/** One tool in OpenAI's format, which LangChain's `bindTools` takes for every provider. */
const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The current weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const SUNNY = 'Sunny, 21 degrees';
const asText = (value: unknown) => JSON.stringify(value);

/** An OpenAI mock that calls get_weather for Paris when offered it, until a tool has answered. */
const openaiWeather = (upstream: { openai: (b?: object) => Promise<MockOpenAIUpstream> }, text: string) => upstream.openai({
  text,
  toolCall: (request: Record<string, unknown>) => {
    const offered = ((request.tools ?? []) as { function?: { name?: string } }[]).some((t) => t.function?.name === 'get_weather');
    const answered = (request.messages as { role?: string }[]).some((m) => m.role === 'tool');
    return offered && !answered ? { name: 'get_weather', arguments: '{"city":"Paris"}' } : undefined;
  },
});

/** An Anthropic mock that calls get_weather for Paris when offered it, until a tool has answered. */
const anthropicWeather = (upstream: { anthropic: (b?: object) => Promise<MockAnthropicUpstream> }, text: string) => upstream.anthropic({
  text,
  toolUse: (request: Record<string, unknown>) => {
    const offered = ((request.tools ?? []) as { name?: string }[]).some((t) => t.name === 'get_weather');
    return offered && !asText(request.messages).includes('tool_result') ? { name: 'get_weather', input: { city: 'Paris' } } : undefined;
  },
});

/** What the upstream got back as the tool's answer: its tool messages or tool_result blocks. */
function toolAnswers(mock: MockOpenAIUpstream | MockAnthropicUpstream): string {
  const last = mock.requests.at(-1)!.body.messages as { role?: string; content?: unknown }[];
  return asText(last.filter((m) => m.role === 'tool' || asText(m.content).includes('tool_result')));
}

/** The request log's rows of `model`, once there are `count` of them (the log is written after the answer, in no set order). */
async function loggedRows(stack: { admin(method: string, path: string): Promise<any> }, model: string, count: number): Promise<any[]> {
  let rows: any[] = [];
  await expect.poll(async () => {
    rows = (await stack.admin('GET', `/api/log/?model_name=${model}`)).body.data?.items ?? [];
    return rows.length;
  }, { timeout: 20_000, interval: 250 }).toBe(count);
  return rows;
}

/** Rows of `route`, all answered 200, one of them streamed, among them one for each usage given. */
function expectRows(rows: any[], route: string, usages: { prompt_tokens?: number; completion_tokens?: number; streamed: boolean }[]) {
  expect(rows.map((row) => [row.route, row.status])).toEqual(rows.map(() => [route, 200]));
  expect(rows.filter((row) => row.streamed)).toHaveLength(1);
  expect(rows).toEqual(expect.arrayContaining(usages.map((usage) => expect.objectContaining(usage))));
}

/** Invoke, stream, and a get_weather round trip with a LangChain chat model; returns the invoke's and the final answer's usage. */
async function langchainTurns(model: ChatOpenAI | ChatAnthropic, answer: string) {
  const invoked = await model.invoke('Say hello');
  expect(invoked.text).toBe(answer);
  let streamed = '';
  let pieces = 0;
  for await (const chunk of await model.stream('Say hello')) {
    streamed += chunk.text;
    pieces++;
  }
  expect(streamed).toBe(answer);
  expect(pieces).toBeGreaterThan(1);
  const withTools = model.bindTools([weatherTool]);
  const ask = new HumanMessage('What is the weather in Paris?');
  const call = (await withTools.invoke([ask])) as AIMessage;
  expect(call.tool_calls).toEqual([expect.objectContaining({ name: 'get_weather', args: { city: 'Paris' }, id: expect.any(String) })]);
  const final = await withTools.invoke([ask, call, new ToolMessage({ tool_call_id: call.tool_calls![0]!.id!, content: SUNNY })]);
  expect(final.text).toBe(answer);
  return { invoked: invoked.usage_metadata!, final: final.usage_metadata! };
}

describe('LangChain.js ChatOpenAI with useResponsesApi', () => {
  for (const kind of ['openai', 'anthropic'] as const) {
    it(`invokes, streams and round-trips a tool call on an ${kind} channel, through /v1/responses`, async ({ stack, upstream, channel, apiKey }) => {
      const answer = `Paris is sunny, says ${kind}.`;
      const mock = kind === 'openai' ? await openaiWeather(upstream, answer) : await anthropicWeather(upstream, answer);
      const name = uniqueModel();
      await channel(mock, [name]);
      const { key } = await apiKey();
      const model = new ChatOpenAI({ model: name, apiKey: key, useResponsesApi: true, maxRetries: 0, configuration: { baseURL: `${stack.gateway.url}/v1` } });
      const usage = await langchainTurns(model, answer);
      expect(toolAnswers(mock)).toContain(SUNNY);
      expect(mock.requests.map((r) => r.path)).toEqual(Array(4).fill(kind === 'openai' ? '/v1/chat/completions' : '/v1/messages'));
      const rows = await loggedRows(stack, name, 4);
      expectRows(rows, '/v1/responses', [
        { streamed: false, prompt_tokens: usage.invoked.input_tokens, completion_tokens: usage.invoked.output_tokens },
        { streamed: false, prompt_tokens: usage.final.input_tokens, completion_tokens: usage.final.output_tokens },
      ]);
    });
  }
});

describe('LangChain.js ChatAnthropic', () => {
  for (const kind of ['anthropic', 'openai'] as const) {
    it(`invokes, streams and round-trips a tool call on an ${kind} channel, through /v1/messages`, async ({ stack, upstream, channel, apiKey }) => {
      const answer = `Paris is sunny, says ${kind}.`;
      const mock = kind === 'openai' ? await openaiWeather(upstream, answer) : await anthropicWeather(upstream, answer);
      const name = uniqueModel();
      await channel(mock, [name]);
      const { key } = await apiKey();
      const model = new ChatAnthropic({ model: name, apiKey: key, anthropicApiUrl: stack.gateway.url, maxRetries: 0, maxTokens: 256 });
      const usage = await langchainTurns(model, answer);
      expect(toolAnswers(mock)).toContain(SUNNY);
      expect(mock.requests.map((r) => r.path)).toEqual(Array(4).fill(kind === 'openai' ? '/v1/chat/completions' : '/v1/messages'));
      const rows = await loggedRows(stack, name, 4);
      expectRows(rows, '/v1/messages', [
        { streamed: false, prompt_tokens: usage.invoked.input_tokens, completion_tokens: usage.invoked.output_tokens },
        { streamed: false, prompt_tokens: usage.final.input_tokens, completion_tokens: usage.final.output_tokens },
      ]);
    });
  }
});

describe('the Vercel AI SDK with @ai-sdk/anthropic', () => {
  for (const kind of ['anthropic', 'openai'] as const) {
    it(`generateText, streamText and a tool on an ${kind} channel, through /v1/messages`, async ({ stack, upstream, channel, apiKey }) => {
      const answer = `Paris is sunny, says ${kind}.`;
      const mock = kind === 'openai' ? await openaiWeather(upstream, answer) : await anthropicWeather(upstream, answer);
      const name = uniqueModel();
      await channel(mock, [name]);
      const { key } = await apiKey();
      const model = createAnthropic({ baseURL: `${stack.gateway.url}/v1`, apiKey: key })(name);

      const generated = await generateText({ model, prompt: 'Say hello', maxOutputTokens: 256, maxRetries: 0 });
      expect(generated.text).toBe(answer);
      const streamed = streamText({ model, prompt: 'Say hello', maxOutputTokens: 256, maxRetries: 0, onError: ({ error }) => { throw error; } });
      const pieces: string[] = [];
      for await (const piece of streamed.textStream) pieces.push(piece);
      expect(pieces.join('')).toBe(answer);
      expect(pieces.length).toBeGreaterThan(1);
      const streamedUsage = await streamed.usage;

      const cities: string[] = [];
      const withTool = await generateText({
        model, prompt: 'What is the weather in Paris?', maxOutputTokens: 256, maxRetries: 0, stopWhen: stepCountIs(3),
        tools: {
          get_weather: tool({
            description: 'The current weather in a city',
            inputSchema: jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: async ({ city }) => { cities.push(city); return SUNNY; },
          }),
        },
      });
      expect(cities).toEqual(['Paris']);
      expect(withTool.text).toBe(answer);
      expect(withTool.steps).toHaveLength(2);
      expect(toolAnswers(mock)).toContain(SUNNY);

      const rows = await loggedRows(stack, name, 4);
      expectRows(rows, '/v1/messages', [
        { streamed: false, prompt_tokens: generated.usage.inputTokens, completion_tokens: generated.usage.outputTokens },
        { streamed: true, prompt_tokens: streamedUsage.inputTokens, completion_tokens: streamedUsage.outputTokens },
      ]);
    });
  }
});

describe('@google/genai 2.x', () => {
  it('generateContent on an openai channel, through chat completions, logged with its tokens', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'Hello from GPT via Gemini 2' });
    const name = uniqueModel();
    await channel(mock, ['gpt-up'], { model_mapping: { [name]: 'gpt-up' } });
    const { key } = await apiKey();
    const ai = new GoogleGenAI2({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 15_000 } });
    const reply = await ai.models.generateContent({ model: name, contents: 'Say hello', config: { systemInstruction: 'Be brief.', maxOutputTokens: 40 } });
    expect(reply.text).toBe('Hello from GPT via Gemini 2');
    expect(reply.candidates![0]!.finishReason).toBe('STOP');
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions', body: { model: 'gpt-up', max_tokens: 40, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello' }] } });
    const usage = reply.usageMetadata!;
    const [row] = await loggedRows(stack, name, 1);
    expect(row).toMatchObject({ status: 200, route: '/v1beta/models/{model}:generateContent', streamed: false, prompt_tokens: usage.promptTokenCount, completion_tokens: usage.candidatesTokenCount });
  });
});
