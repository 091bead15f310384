/**
 * Every door on every provider, end to end: Gemini's own door (`@google/genai` 3.x,
 * generateContent and generateContentStream with a function-call turn) on openai and anthropic
 * channels, translated through the conversation model, and OpenAI's Responses door (the `openai`
 * SDK) on a gemini channel. Real Redis, PostgreSQL, completion-worker and gateway processes, the
 * test kit's mock upstreams over real HTTP; each mock records what it got, so the translated
 * request is checked, and each answer's usage is checked in the door's own fields, in the
 * request log and in the charge.
 */
import { describe, expect } from 'vitest';
import { GoogleGenAI, Type, type Content } from '@google/genai';
import OpenAI from 'openai';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  // The audio worker serves speech, which must never reach a channel of another type.
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
  startTimeoutMs: 180_000,
});

let seq = 0;
const uniqueModel = () => `every-door-${++seq}`;
const requestId = () => `every-door-${Date.now()}-${++seq}`;

const genai = (baseUrl: string, apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl, timeout: 15_000 } });
const withId = (id: string) => ({ httpOptions: { headers: { 'x-request-id': id } } });

const weather = { name: 'get_weather', description: 'The weather in a city', parameters: { type: Type.OBJECT, properties: { location: { type: Type.STRING } }, required: ['location'] } };
const weatherSchema = { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] };

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

describe("Gemini's door on an openai channel", () => {
  it('generateContent: a function call turn through chat completions, cached tokens as cachedContentTokenCount, logged and charged', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ toolCall: { name: 'get_weather', arguments: '{"location":"Paris"}' }, usageFields: { prompt_tokens_details: { cached_tokens: 2 } } });
    const model = uniqueModel();
    await channel(mock, ['gpt-up'], { model_mapping: { [model]: 'gpt-up' } });
    const key = await apiKey();
    const ai = genai(stack.gateway.url, key.key);
    const tools = [{ functionDeclarations: [weather] }];
    const ask: Content = { role: 'user', parts: [{ text: 'Weather in Paris?' }] };

    const first = await ai.models.generateContent({ model, contents: [ask], config: { systemInstruction: 'Be brief.', tools, temperature: 0.2, maxOutputTokens: 60 } });
    expect(first.functionCalls).toEqual([{ id: expect.any(String), name: 'get_weather', args: { location: 'Paris' } }]);
    expect(first.candidates![0]!.finishReason).toBe('STOP');
    expect(first.modelVersion).toBe(model);
    expect(mock.requests.at(-1)).toMatchObject({ path: '/v1/chat/completions' });
    expect(mock.requests.at(-1)!.body).toEqual({
      model: 'gpt-up', stream: false, max_tokens: 60, temperature: 0.2,
      tools: [{ type: 'function', function: { name: 'get_weather', description: weather.description, parameters: weatherSchema } }],
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Weather in Paris?' }],
    });

    // The client sends the call back as it came and its result by name, as Gemini's own applications do.
    mock.setBehaviour({ text: 'Sunny in Paris.', usageFields: { prompt_tokens_details: { cached_tokens: 2 } } });
    const id = requestId();
    const second = await ai.models.generateContent({
      model,
      contents: [ask, first.candidates![0]!.content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'Sunny, 21 °C' } } }] }],
      config: { tools, ...withId(id) },
    });
    expect(second.text).toBe('Sunny in Paris.');
    const callId = first.functionCalls![0]!.id;
    expect(mock.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }] },
      { role: 'tool', tool_call_id: callId, content: 'Sunny, 21 °C' },
    ]);
    const usage = second.usageMetadata!;
    expect(usage.cachedContentTokenCount).toBe(2);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 200, model, route: '/v1beta/models/{model}:generateContent', streamed: false, prompt_tokens: usage.promptTokenCount, completion_tokens: usage.candidatesTokenCount, total_tokens: usage.totalTokenCount });
    await expect.poll(() => usedQuota(stack, key.id)).toBeGreaterThanOrEqual(usage.totalTokenCount! + first.usageMetadata!.totalTokenCount!);
  });

  it('generateContentStream: text piece by piece, a function call whole, usage on the last event, logged and charged', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'one two three four', usageFields: { prompt_tokens_details: { cached_tokens: 1 } } });
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const ai = genai(stack.gateway.url, key.key);
    const id = requestId();

    const events = [];
    for await (const event of await ai.models.generateContentStream({ model, contents: 'Count', config: withId(id) })) events.push(event);
    expect(events.length).toBeGreaterThan(2);
    expect(events.map((event) => event.text ?? '').join('')).toBe('one two three four');
    expect(events.slice(0, -1).every((event) => event.candidates![0]!.finishReason === undefined)).toBe(true);
    const last = events.at(-1)!;
    expect(last.candidates![0]!.finishReason).toBe('STOP');
    const usage = last.usageMetadata!;
    expect(usage).toMatchObject({ cachedContentTokenCount: 1, totalTokenCount: usage.promptTokenCount! + usage.candidatesTokenCount! });
    expect(mock.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 200, route: '/v1beta/models/{model}:streamGenerateContent', streamed: true, prompt_tokens: usage.promptTokenCount, completion_tokens: usage.candidatesTokenCount, total_tokens: usage.totalTokenCount });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(usage.totalTokenCount);

    mock.setBehaviour({ toolCall: { name: 'get_weather', arguments: '{"location":"Rome"}' } });
    const called = [];
    for await (const event of await ai.models.generateContentStream({ model, contents: 'Weather in Rome?', config: { tools: [{ functionDeclarations: [weather] }], toolConfig: { functionCallingConfig: { mode: 'ANY' as never } } } })) called.push(event);
    expect(called.flatMap((event) => event.functionCalls ?? [])).toEqual([{ id: expect.any(String), name: 'get_weather', args: { location: 'Rome' } }]);
    expect(mock.requests.at(-1)!.body).toMatchObject({ tool_choice: 'required' });
  });

  it('refuses in Gemini\'s error shape what only Gemini runs, before any upstream call', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const before = mock.requests.length;
    const refused = await genai(stack.gateway.url, key).models.generateContent({ model, contents: 'x', config: { candidateCount: 2 } }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 400, message: expect.stringContaining('candidateCount') });
    expect(mock.requests.length).toBe(before);
  });

  it('never routes speech to an openai channel: speech keeps its own operation', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const speech = await genai(stack.gateway.url, key).models.generateContent({
      model, contents: 'Say hi', config: { responseModalities: ['AUDIO' as never], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
    }).catch((error: unknown) => error);
    // Routed among gemini channels alone, of which none serves the model.
    expect(speech).toMatchObject({ status: 404, message: expect.stringMatching(new RegExp(`${model}.{0,4} does not exist or no channel serves it`)) });
    expect(mock.requests).toHaveLength(0);
  });
});

describe("Gemini's door on an anthropic channel", () => {
  it('generateContent and generateContentStream: a function call turn through Messages, the tool result paired with its tool_use', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.anthropic();
    const model = uniqueModel();
    await channel(mock, ['claude-up'], { model_mapping: { [model]: 'claude-up' }, key: 'sk-ant-channel' });
    const key = await apiKey();
    const ai = genai(stack.gateway.url, key.key);
    const tools = [{ functionDeclarations: [weather] }];
    const ask: Content = { role: 'user', parts: [{ text: 'What is the weather in San Francisco?' }] };

    const first = await ai.models.generateContent({ model, contents: [ask], config: { tools, maxOutputTokens: 200, systemInstruction: 'Use tools.' } });
    const call = first.functionCalls![0]!;
    expect(call).toMatchObject({ name: 'get_weather', args: { location: 'San Francisco, CA' } });
    expect(first.text).toBe('Let me look that up for you.');
    const sent = mock.requests.at(-1)!;
    expect(sent).toMatchObject({ path: '/v1/messages', apiKey: 'sk-ant-channel' });
    expect(sent.body).toEqual({
      model: 'claude-up', max_tokens: 200, stream: false,
      system: [{ type: 'text', text: 'Use tools.' }],
      tools: [{ name: 'get_weather', description: weather.description, input_schema: weatherSchema }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is the weather in San Francisco?' }] }],
    });

    const id = requestId();
    const events = [];
    const stream = await ai.models.generateContentStream({
      model,
      contents: [ask, first.candidates![0]!.content!, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'Foggy, 14 °C' } } }] }],
      config: { tools, maxOutputTokens: 200, ...withId(id) },
    });
    for await (const event of stream) events.push(event);
    const replayed = mock.requests.at(-1)!.body as { messages: { role: string; content: Record<string, unknown>[] }[] };
    expect(replayed.messages[1]!.content).toEqual([{ type: 'text', text: 'Let me look that up for you.' }, { type: 'tool_use', id: call.id, name: 'get_weather', input: { location: 'San Francisco, CA', unit: 'celsius' } }]);
    expect(replayed.messages[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: [{ type: 'text', text: 'Foggy, 14 °C' }] }] });
    expect(events.map((event) => event.text ?? '').join('')).toBe('Hello! This is a mock reply from Claude.');
    const usage = events.at(-1)!.usageMetadata!;
    expect(events.at(-1)!.candidates![0]!.finishReason).toBe('STOP');
    expect(usage.promptTokenCount).toBeGreaterThan(0);
    expect(usage.totalTokenCount).toBe(usage.promptTokenCount! + usage.candidatesTokenCount!);
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 200, route: '/v1beta/models/{model}:streamGenerateContent', streamed: true, prompt_tokens: usage.promptTokenCount, total_tokens: usage.totalTokenCount });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(first.usageMetadata!.totalTokenCount! + usage.totalTokenCount!);
  });
});

describe("Gemini's door on an anthropic channel, thinking", () => {
  it('streams thought parts with their signature, and a streamed thought sent back reaches Anthropic as one thinking block, byte for byte', async ({ upstream, channel, apiKey, stack }) => {
    const mock = await upstream.anthropic({ text: 'Brief answer.' });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const ai = genai(stack.gateway.url, key);
    const config = { maxOutputTokens: 4000, thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 } };

    const events = [];
    for await (const event of await ai.models.generateContentStream({ model, contents: 'Think, then answer.', config })) events.push(event);
    expect(mock.requests.at(-1)!.body).toMatchObject({ max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 2048 } });
    const parts = events.flatMap((event) => event.candidates![0]!.content!.parts!);
    const thought = parts.filter((part) => part.thought).map((part) => part.text).join('');
    const signature = parts.find((part) => part.thoughtSignature)?.thoughtSignature;
    expect(thought).toBe('The user asked something; I will answer briefly.');
    expect(signature).toMatch(/^sig_mock_/);
    expect(events.map((event) => event.text ?? '').join('')).toBe('Brief answer.');
    expect(events.at(-1)!.usageMetadata!.totalTokenCount).toBeGreaterThan(0);

    await ai.models.generateContent({ model, config, contents: [{ role: 'user', parts: [{ text: 'Think, then answer.' }] }, { role: 'model', parts }, { role: 'user', parts: [{ text: 'Again.' }] }] });
    const replayed = mock.requests.at(-1)!.body as { messages: { role: string; content: Record<string, unknown>[] }[] };
    const [thinking, ...answer] = replayed.messages[1]!.content;
    expect(thinking).toEqual({ type: 'thinking', thinking: thought, signature });
    expect(answer.map((block) => block.text).join('')).toBe('Brief answer.');
  });
});

describe('the Responses door on a gemini channel', () => {
  const client = (baseUrl: string, key: string) => new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });

  it('responses.create and responses.stream through generateContent, cached tokens in input_tokens_details, logged and charged', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.gemini({ text: 'Hello from Gemini' });
    mock.set({ cachedTokens: 2 });
    const model = uniqueModel();
    await channel(mock, ['gemini-up'], { model_mapping: { [model]: 'gemini-up' } });
    const key = await apiKey();
    const openai = client(stack.gateway.url, key.key);

    const whole = await openai.responses.create({ model, instructions: 'Be brief.', input: 'Say hello', max_output_tokens: 64, store: false });
    expect(whole).toMatchObject({ object: 'response', status: 'completed', model, output_text: 'Hello from Gemini' });
    expect(whole.usage!.input_tokens_details.cached_tokens).toBe(2);
    expect(whole.usage!.total_tokens).toBe(whole.usage!.input_tokens + whole.usage!.output_tokens);
    expect(mock.received.at(-1)).toMatchObject({
      model: 'gemini-up', method: 'generateContent', apiKey: mock.apiKey,
      body: { systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }], generationConfig: { maxOutputTokens: 64 } },
    });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(whole.usage!.total_tokens);

    const id = requestId();
    let streamed = '';
    const stream = openai.responses.stream({ model, input: 'Say hello', store: false }, { headers: { 'x-request-id': id } });
    stream.on('response.output_text.delta', (event) => { streamed += event.delta; });
    const final = await stream.finalResponse();
    expect(streamed).toBe('Hello from Gemini');
    expect(final.usage!.input_tokens_details.cached_tokens).toBe(2);
    expect(mock.received.at(-1)!.method).toBe('streamGenerateContent');
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 200, route: '/v1/responses', streamed: true, total_tokens: final.usage!.total_tokens });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(whole.usage!.total_tokens + final.usage!.total_tokens);
  });

  it('runs a function call turn: the call from a functionCall part, its output sent back as a functionResponse', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(stack.gateway.url, key);
    const tool = { type: 'function' as const, name: 'get_weather', description: 'The weather', parameters: weatherSchema, strict: false };
    const ask = { role: 'user' as const, content: 'Weather in Oslo?' };
    const first = await openai.responses.stream({ model, input: [ask], tools: [tool], store: false }).finalResponse();
    const call = first.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call).toMatchObject({ name: 'get_weather', status: 'completed' });
    expect(JSON.parse(call.arguments)).toEqual({ location: 'mock' });
    const answer = await openai.responses.create({ model, tools: [tool], store: false, input: [ask, { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments }, { type: 'function_call_output', call_id: call.call_id, output: 'Snow' }] });
    expect(answer.output_text).toBe('The function get_weather returned {"content":"Snow"}');
    expect((mock.received.at(-1)!.body as { contents: unknown[] }).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Oslo?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { location: 'mock' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { content: 'Snow' } } }] },
    ]);
  });
});

describe('chat completions on a gemini channel', () => {
  const client = (baseUrl: string, key: string) => new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });

  it('chat.completions.create with a tool turn and stream with include_usage, through generateContent, cached tokens in prompt_tokens_details, logged and charged', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.gemini();
    mock.set({ cachedTokens: 3 });
    const model = uniqueModel();
    await channel(mock, ['gemini-up'], { model_mapping: { [model]: 'gemini-up' } });
    const key = await apiKey();
    const openai = client(stack.gateway.url, key.key);
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', description: 'The weather', parameters: weatherSchema } }];
    const ask = { role: 'user' as const, content: 'Weather in Lima?' };

    const first = await openai.chat.completions.create({ model, messages: [{ role: 'system', content: 'Be brief.' }, ask], tools, max_tokens: 40 });
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call.function).toEqual({ name: 'get_weather', arguments: '{"location":"mock"}' });
    expect(first.usage!.prompt_tokens_details!.cached_tokens).toBe(3);
    expect(mock.received.at(-1)).toMatchObject({
      model: 'gemini-up', method: 'generateContent',
      body: { systemInstruction: { parts: [{ text: 'Be brief.' }] }, contents: [{ role: 'user', parts: [{ text: 'Weather in Lima?' }] }], tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: weatherSchema }] }], generationConfig: { maxOutputTokens: 40 } },
    });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(first.usage!.total_tokens);

    const id = requestId();
    const stream = await openai.chat.completions.create(
      { model, tools, stream: true, stream_options: { include_usage: true }, messages: [ask, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'Warm' }] },
      { headers: { 'x-request-id': id } },
    );
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('The function get_weather returned {"content":"Warm"}');
    expect(usage).toMatchObject({ prompt_tokens_details: { cached_tokens: 3 } });
    expect((mock.received.at(-1)!.body as { contents: unknown[] }).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Lima?' }] },
      { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { location: 'mock' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { content: 'Warm' } } }] },
    ]);
    const row = await loggedRow(stack, id);
    expect(row).toMatchObject({ status: 200, route: '/v1/chat/completions', streamed: true, prompt_tokens: usage!.prompt_tokens, completion_tokens: usage!.completion_tokens });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(first.usage!.total_tokens + usage!.total_tokens);
  });
});
