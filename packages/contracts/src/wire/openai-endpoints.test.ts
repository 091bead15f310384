/**
 * Each OpenAI endpoint's schema gives a valid body back as it came, field for field: the
 * gateway stores a large body's JSON as received in place of the parsed value (job-client.ts,
 * `requestJson`), which is only right while no schema adds a default, drops a field or
 * transforms a value.
 */
import { describe, expect, it } from 'vitest';
import { openaiEndpoints } from './openai-batch.ts';

const bodies: Record<keyof typeof openaiEndpoints, unknown[]> = {
  '/v1/completions': [
    { model: 'm', prompt: 'hello' },
    { model: 'm', prompt: ['a', 'b'], max_tokens: null, temperature: 0.5, n: 2, stream: true, stream_options: { include_usage: true }, stop: ['\n'], logit_bias: { 50256: -100 }, user: 'u', echo: false, suffix: null },
    { model: 'm', prompt: [1, 2, 3], seed: 7, unknown_field: { nested: [1, null, 'x'] }, logprobs: 2 },
    { model: 'm', prompt: [[1, 2], [3]], best_of: 3, n: 1, presence_penalty: -1, frequency_penalty: 1 },
  ],
  '/v1/chat/completions': [
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
  '/v1/embeddings': [
    { model: 'm', input: 'text' },
    { model: 'm', input: ['a', 'b'], encoding_format: 'base64', dimensions: 256, user: null },
    { model: 'm', input: [[1, 2, 3], [4]], encoding_format: 'float', other: { k: true } },
  ],
};

describe('the OpenAI endpoints\' schemas', () => {
  for (const [path, endpoint] of Object.entries(openaiEndpoints)) {
    it(`give a valid body back as it came: ${path}`, () => {
      for (const body of bodies[path as keyof typeof openaiEndpoints]) {
        const parsed = endpoint.schema.safeParse(body);
        expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
        expect(parsed.data).toStrictEqual(body);
        expect(JSON.parse(JSON.stringify(parsed.data))).toStrictEqual(body);
      }
    });
  }
});
