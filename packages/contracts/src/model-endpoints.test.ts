/**
 * The endpoint table: one entry a path of a door (Gemini's generateContent one by its body's
 * rule), every schema marked `asReceived` gives a valid body back as it came, field for field
 * (the gateway stores a large body's JSON as received in place of the parsed value:
 * job-client.ts, `requestJson`; a batch line is stored as its schema gave it), and the Batch
 * API's view is exactly the entries batches take.
 */
import { describe, expect, it } from 'vitest';
import { batchEndpoints, endpointsOf, modelEndpoints, routeOfOperation, type ModelDoor, type ModelEndpoint } from './model-endpoints.ts';
import { routeOfPayload } from './request-log.ts';

const bodies: Partial<Record<keyof typeof modelEndpoints, unknown[]>> = {
  completions: [
    { model: 'm', prompt: 'hello' },
    { model: 'm', prompt: ['a', 'b'], max_tokens: null, temperature: 0.5, n: 2, stream: true, stream_options: { include_usage: true }, stop: ['\n'], logit_bias: { 50256: -100 }, user: 'u', echo: false, suffix: null },
    { model: 'm', prompt: [1, 2, 3], seed: 7, unknown_field: { nested: [1, null, 'x'] }, logprobs: 2 },
    { model: 'm', prompt: [[1, 2], [3]], best_of: 3, n: 1, presence_penalty: -1, frequency_penalty: 1 },
  ],
  chat: [
    { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    {
      model: 'm', stream: false, max_completion_tokens: 10, max_tokens: null, n: null, response_format: { type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' } } },
      messages: [
        { role: 'system', content: 'be brief', name: 'sys' },
        { role: 'developer', content: [{ type: 'text', text: 'x' }] },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } }, { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }], refusal: null },
        { role: 'tool', content: 'result', tool_call_id: 'c1' },
      ],
      tools: [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: {} }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } }, parallel_tool_calls: false, metadata: { a: 'b' }, store: true, reasoning_effort: 'low', extra: [1, { y: null }],
    },
  ],
  embeddings: [
    { model: 'm', input: 'text' },
    { model: 'm', input: ['a', 'b'], encoding_format: 'base64', dimensions: 256, user: null },
    { model: 'm', input: [[1, 2, 3], [4]], encoding_format: 'float', other: { k: true } },
  ],
  responses: [
    { model: 'm', input: 'hi' },
    {
      model: 'm', instructions: 'be brief', max_output_tokens: 100, temperature: null, store: false, stream: true, metadata: { a: 'b' }, service_tier: 'flex',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' }] },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'result' },
      ],
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: true }, { type: 'web_search' }],
      reasoning: { effort: 'low', summary: null }, text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' } } }, extra: [1, { y: null }],
    },
  ],
  messages: [
    { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    {
      model: 'm', max_tokens: 5, stream: true, system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }], output_config: { effort: 'low' },
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'result' }, { type: 'server_tool_use', id: 'a' }], extra: 1 },
      ],
      tools: [{ name: 'f', input_schema: { type: 'object' } }], tool_choice: { type: 'auto' }, metadata: { user_id: null }, thinking: { type: 'enabled', budget_tokens: 1024 },
    },
  ],
  countTokens: [
    { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    { model: 'm', system: 'be brief', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }], tools: [{ name: 'f' }], unknown: [null] },
  ],
};

describe('the endpoint table', () => {
  it('serves each path of a door by one entry, or by entries whose rules take a body each', () => {
    const speech = { contents: [{ parts: [{ text: 'say hi' }] }], generationConfig: { responseModalities: ['AUDIO'] } };
    const chat = { contents: [{ parts: [{ text: 'hi' }] }] };
    for (const door of ['openai', 'anthropic', 'gemini'] satisfies ModelDoor[]) {
      const paths = new Set(endpointsOf(door).flatMap((entry) => entry.paths));
      for (const path of paths) {
        const served = endpointsOf(door).filter((entry) => entry.paths.includes(path));
        if (served.length === 1) continue;
        for (const body of [speech, chat]) expect(served.filter((entry) => entry.when?.(body)), `${door} ${path}`).toHaveLength(1);
      }
    }
    expect(endpointsOf('gemini').filter((entry) => entry.when?.({ generationConfig: { responseModalities: ['AUDIO'] } })).map((entry) => entry.operation)).toEqual(['generateContent']);
  });

  for (const [name, entry] of Object.entries(modelEndpoints) as [keyof typeof modelEndpoints, ModelEndpoint][]) {
    if (!entry.asReceived) continue;
    it(`gives a valid body back as it came: ${entry.paths.join(', ')}`, () => {
      const samples = bodies[name];
      expect(samples, `sample bodies for ${name}`).toBeDefined();
      const schemas = [entry.schema, ...(entry.batch && entry.batch !== true ? [entry.batch.schema] : [])];
      for (const schema of schemas) {
        for (const body of samples!) {
          const parsed = schema.safeParse(body);
          expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
          expect(parsed.data).toStrictEqual(body);
          expect(JSON.parse(JSON.stringify(parsed.data))).toStrictEqual(body);
        }
      }
    });
  }

  it('gives the Batch API exactly the entries batches take, by path, each marked asReceived', () => {
    const taken = Object.values<ModelEndpoint>(modelEndpoints).filter((entry) => entry.batch);
    expect(Object.keys(batchEndpoints)).toEqual(['/v1/completions', '/v1/chat/completions', '/v1/embeddings', '/v1/responses']);
    expect(Object.keys(batchEndpoints)).toEqual(taken.flatMap((entry) => entry.paths));
    for (const entry of taken) {
      expect(entry.asReceived).toBe(true);
      const view = batchEndpoints[entry.paths[0]!]!;
      expect([view.queue, view.operation, view.worstCase]).toEqual([entry.queue, entry.operation, entry.worstCase]);
    }
    // A Responses line stands alone.
    expect(batchEndpoints['/v1/responses']!.schema.safeParse({ model: 'm', input: 'hi', previous_response_id: 'resp_1' }).success).toBe(false);
    expect(modelEndpoints.responses.schema.safeParse({ model: 'm', input: 'hi', previous_response_id: 'resp_1' }).success).toBe(true);
  });

  it('names the route of every operation and Gemini method for the request log', () => {
    expect(routeOfPayload({ operation: 'chat' })).toBe('/v1/chat/completions');
    expect(routeOfPayload({})).toBe('/v1/completions');
    expect(routeOfPayload({ operation: 'geminiChat', method: 'streamGenerateContent' })).toBe('/v1beta/models/{model}:streamGenerateContent');
    expect(routeOfPayload({ operation: 'embedContent', method: 'batchEmbedContents' })).toBe('/v1beta/models/{model}:batchEmbedContents');
    expect(Object.keys(routeOfOperation).sort()).toEqual([
      'batchEmbedContents', 'chat', 'completions', 'countTokens', 'embedContent', 'embeddings', 'geminiChat', 'generateContent', 'messages', 'responses', 'speech', 'streamGenerateContent',
    ]);
  });
});
