/**
 * The Responses door passed through to an `openai` channel whose upstream serves the Responses
 * API (`responses_api: true`): real Redis, PostgreSQL, worker and gateway processes, the test
 * kit's mock OpenAI upstream speaking `/v1/responses` as OpenAI documents it, and the `openai`
 * SDK. What the translation to chat completions would drop (a hosted tool, `include`,
 * `truncation`) reaches the upstream byte for byte, its events reach the client as it sent
 * them, and its usage is what is logged and charged.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { stackTest, loggedRow } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
});

let seq = 0;
const uniqueModel = () => `passthrough-model-${++seq}`;

/** A client whose request bodies are kept as the SDK sent them. */
function recordingClient(baseURL: string, key: string): { client: OpenAI; sent: string[] } {
  const sent: string[] = [];
  const client = new OpenAI({
    baseURL, apiKey: key, maxRetries: 0, timeout: 15_000,
    fetch: async (url, init) => {
      if (typeof init?.body === 'string') sent.push(init.body);
      return fetch(url, init);
    },
  });
  return { client, sent };
}

/** A request the translation to chat completions would refuse or drop. */
const untranslatable = (model: string) => ({
  model,
  instructions: 'Cite your sources.',
  input: 'What happened in the news today?',
  tools: [{ type: 'web_search_preview' as const, search_context_size: 'low' as const }],
  include: ['message.output_text.logprobs' as const],
  truncation: 'auto' as const,
  max_output_tokens: 200,
  store: false,
});

/** A raw stream's events, as blocks of `event:` and `data:`. */
const eventBlocks = (text: string) => text.trim().split('\n\n').map((block) => {
  const [event, data] = block.split('\n');
  return { name: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) as Record<string, any> };
});

/** An event as the client sees it: the response it carries under the client's model name. */
const asClients = (event: Record<string, any>, model: string) => (event.response ? { ...event, response: { ...event.response, model } } : event);

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

describe('the Responses door on an openai channel whose upstream serves /v1/responses', () => {
  it('passes a whole request through byte for byte (a hosted tool, include, truncation), the model mapped, and charges its usage', async ({ stack, upstream, channel, apiKey }) => {
    const usage = { input_tokens: 321, input_tokens_details: { cached_tokens: 20 }, output_tokens: 45, output_tokens_details: { reasoning_tokens: 7 }, total_tokens: 366 };
    const mock = await upstream.openai({ text: 'Here is the news.', usageFields: usage });
    const model = uniqueModel();
    const made = await channel(mock, ['gpt-native'], { model_mapping: { [model]: 'gpt-native' }, responses_api: true });
    expect(made.responses_api).toBe(true);
    const key = await apiKey();
    const { client, sent } = recordingClient(`${stack.gateway.url}/v1`, key.key);
    const { data: response, response: http } = await client.responses.create(untranslatable(model)).withResponse();

    const received = mock.requests.at(-1)!;
    expect(received.path).toBe('/v1/responses');
    expect(received.authorization).toMatch(/^Bearer sk-upstream-/);
    expect(received.raw).toBe(sent[0]!.replace(`"model":"${model}"`, '"model":"gpt-native"'));
    // The upstream's own response, under the client's model name.
    expect(response).toEqual({ ...JSON.parse(received.reply!), model, output_text: 'Here is the news.' });
    expect(response.tools).toEqual([{ type: 'web_search_preview', search_context_size: 'low' }]);
    expect(response.usage).toEqual(usage);

    await expect.poll(() => usedQuota(stack, key.id)).toBe(366);
    const row = await loggedRow(stack, http.headers.get('x-request-id')!);
    expect(row).toMatchObject({ route: '/v1/responses', model, upstream_model: 'gpt-native', status: 200, prompt_tokens: 321, completion_tokens: 45 });
  });

  it('relays a stream\'s events as the upstream sent them, numbered as it numbered them, and charges response.completed\'s usage', async ({ stack, upstream, channel, apiKey }) => {
    const usage = { input_tokens: 50, input_tokens_details: { cached_tokens: 0 }, output_tokens: 4, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 54 };
    const mock = await upstream.openai({ text: 'one two three four', usageFields: usage });
    const model = uniqueModel();
    await channel(mock, [model], { responses_api: true });
    const key = await apiKey();
    const body = JSON.stringify({ ...untranslatable(model), stream: true });
    const answer = await fetch(`${stack.gateway.url}/v1/responses`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body });
    expect(answer.status).toBe(200);
    const got = eventBlocks(await answer.text());

    const received = mock.requests.at(-1)!;
    expect(received.raw).toBe(body);
    const upstreamSent = eventBlocks(received.reply!);
    expect(got).toEqual(upstreamSent.map((event) => ({ name: event.name, data: asClients(event.data, model) })));
    expect(got.map((event) => event.data.sequence_number)).toEqual(got.map((_, at) => at));
    expect(got.at(-1)!.data).toMatchObject({ type: 'response.completed', response: { usage, output: [{ content: [{ text: 'one two three four' }] }] } });

    await expect.poll(() => usedQuota(stack, key.id)).toBe(54);
    const row = await loggedRow(stack, answer.headers.get('x-request-id')!);
    expect(row).toMatchObject({ route: '/v1/responses', model, status: 200, prompt_tokens: 50, completion_tokens: 4 });
  });

  it('streams through the SDK\'s responses.stream to its final response', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'streamed through' });
    const model = uniqueModel();
    await channel(mock, [model], { responses_api: true });
    const { key } = await apiKey();
    const { client } = recordingClient(`${stack.gateway.url}/v1`, key);
    const stream = client.responses.stream(untranslatable(model));
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(deltas.join('')).toBe('streamed through');
    expect(final).toMatchObject({ status: 'completed', model, output_text: 'streamed through', truncation: 'auto' });
  });

  it('runs a background response on the gateway\'s queues, streamed to the upstream without background, stored under the id its client was given', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'done later' });
    const model = uniqueModel();
    await channel(mock, [model], { responses_api: true });
    const { key } = await apiKey();
    const { client } = recordingClient(`${stack.gateway.url}/v1`, key);
    const queued = await client.responses.create({ ...untranslatable(model), store: true, background: true });
    expect(queued).toMatchObject({ status: 'queued', background: true });
    await expect.poll(async () => (await client.responses.retrieve(queued.id)).status, { timeout: 10_000, interval: 200 }).toBe('completed');
    expect(await client.responses.retrieve(queued.id)).toMatchObject({ id: queued.id, model, output_text: 'done later', truncation: 'auto' });
    const received = mock.requests.at(-1)!;
    expect(received.body).not.toHaveProperty('background');
    expect(received.body).toMatchObject({ stream: true, tools: [{ type: 'web_search_preview' }], include: ['message.output_text.logprobs'], truncation: 'auto' });
  });

  it('continues a stored response with the history the gateway rebuilt, never the gateway\'s previous_response_id, so the upstream sees each turn once', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'first answer' });
    const model = uniqueModel();
    await channel(mock, [model], { responses_api: true });
    const { key } = await apiKey();
    const { client } = recordingClient(`${stack.gateway.url}/v1`, key);
    const first = await client.responses.create({ model, input: 'first question', store: true });
    const second = await client.responses.create({ model, input: 'second question', previous_response_id: first.id, store: true });
    expect(second.status).toBe('completed');

    expect(mock.requests).toHaveLength(2);
    const continued = mock.requests[1]!.body as Record<string, any>;
    expect(continued).not.toHaveProperty('previous_response_id');
    const said = JSON.stringify(continued.input);
    // The first turn once (its question and its answer), then the new question.
    expect(said.split('first question')).toHaveLength(2);
    expect(said.split('first answer')).toHaveLength(2);
    expect(said.indexOf('first question')).toBeLessThan(said.indexOf('first answer'));
    expect(said.indexOf('first answer')).toBeLessThan(said.indexOf('second question'));
  });

  it('refuses what lies in the channel\'s shared account (a file, a vector store, a stored prompt, a conversation) and the priority tier with a 400 naming the field, and passes web_search through', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'searched' });
    const model = uniqueModel();
    await channel(mock, [model], { responses_api: true });
    const { key } = await apiKey();
    const { client } = recordingClient(`${stack.gateway.url}/v1`, key);
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-another-tenants' }] }] }, /^invalid input\[0\]\.content\[0\]\.file_id: is not served: a file belongs to the channel's OpenAI account, which every caller of this gateway shares/],
      [{ tools: [{ type: 'file_search', vector_store_ids: ['vs_another_tenants'] }] }, /^invalid tools\[0\]\.type: is not served: a vector store belongs/],
      [{ prompt: { id: 'pmpt_another_tenants' } }, /^invalid prompt: is not served: a stored prompt belongs/],
      [{ conversation: 'conv_another_tenants' }, /^invalid conversation: is not served/],
      [{ service_tier: 'priority' }, /^invalid service_tier: must be "auto", "default" or "flex": a premium tier costs more than the quota counts/],
    ];
    for (const [fields, message] of refusals) {
      const refused = await client.responses.create({ model, input: 'hi', ...fields } as never).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(message) });
    }
    expect(mock.requests).toHaveLength(0);
    const searched = await client.responses.create({ model, input: 'news?', tools: [{ type: 'web_search' }], store: false });
    expect(searched.output_text).toBe('searched');
    expect(mock.requests.at(-1)!.body).toMatchObject({ tools: [{ type: 'web_search' }] });
  });

  it('leaves a hosted tool out on a channel whose requests are translated (no provider behind a translation runs it), and answers', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({});
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const { client } = recordingClient(`${stack.gateway.url}/v1`, key);
    const response = await client.responses.create(untranslatable(model));
    expect(response.status).toBe('completed');
    expect(response.output_text.length).toBeGreaterThan(0);
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0]!.path).toBe('/v1/chat/completions');
    expect(mock.requests[0]!.body).not.toHaveProperty('tools');
  });

  it('refuses responses_api on a channel that is not openai', async ({ stack }) => {
    const answer = await stack.admin('POST', '/api/channel/', { name: 'not-openai', type: 'anthropic', key: 'sk-ant-x', base_url: 'http://127.0.0.1:9', models: ['m'], responses_api: true });
    expect(answer.status).toBe(400);
    expect(JSON.stringify(answer.body)).toMatch(/responses_api/);
  });
});
