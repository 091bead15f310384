import { describe, expect, it } from 'vitest';
import { parseOrThrow } from '../validation.ts';
import { completionRequestSchema } from './openai-completion.ts';
import { OUTPUT_LENGTH_FIELDS } from '../output-length.ts';
import { chatRequestSchema } from './openai-chat.ts';
import { batchEndpoints } from '../model-endpoints.ts';

const parse = (body: unknown) => parseOrThrow(completionRequestSchema, body);
const paramOf = (body: unknown) => {
  try {
    parse(body);
    return 'accepted';
  } catch (error) {
    return (error as { param: string | null }).param;
  }
};

describe('completion request schema', () => {
  it('accepts every prompt form', () => {
    for (const prompt of ['hi', '', ['a', 'b'], [1, 2, 3], [[1, 2], [3]]]) {
      expect(paramOf({ model: 'm', prompt })).toBe('accepted');
    }
  });

  it('names the field at fault', () => {
    expect(paramOf({ prompt: 'x' })).toBe('model');
    expect(paramOf({ model: 'm' })).toBe('prompt');
    expect(paramOf({ model: 'm', prompt: [] })).toBe('prompt');
    expect(paramOf({ model: 'm', prompt: [1.5] })).toBe('prompt');
    expect(paramOf({ model: 'm', prompt: 'x', stop: ['1', '2', '3', '4', '5'] })).toBe('stop');
    expect(paramOf({ model: 'm', prompt: 'x', stop: [] })).toBe('stop');
    expect(paramOf({ model: 'm', prompt: 'x', max_tokens: -1 })).toBe('max_tokens');
    expect(paramOf({ model: 'm', prompt: 'x', temperature: 2.5 })).toBe('temperature');
    expect(paramOf({ model: 'm', prompt: 'x', top_p: 1.1 })).toBe('top_p');
    expect(paramOf({ model: 'm', prompt: 'x', n: 0 })).toBe('n');
    expect(paramOf({ model: 'm', prompt: 'x', n: 129 })).toBe('n');
    expect(paramOf({ model: 'm', prompt: 'x', logprobs: 6 })).toBe('logprobs');
    expect(paramOf({ model: 'm', prompt: 'x', presence_penalty: -3 })).toBe('presence_penalty');
    expect(paramOf({ model: 'm', prompt: 'x', frequency_penalty: 2.1 })).toBe('frequency_penalty');
    expect(paramOf({ model: 'm', prompt: 'x', n: 3, best_of: 2 })).toBe('best_of');
    expect(paramOf({ model: 'm', prompt: 'x', stream: true, best_of: 2 })).toBe('best_of');
    expect(paramOf({ model: 'm', prompt: 'x', stream_options: { include_usage: true } })).toBe('stream_options');
    expect(paramOf({ model: 'm', prompt: 'x', logit_bias: { abc: 1 } })).toBe('logit_bias.abc');
    expect(paramOf({ model: 'm', prompt: 'x', logit_bias: { '50256': -101 } })).toBe('logit_bias.50256');
    expect(paramOf({ model: 'm', prompt: 'x', echo: 'yes' })).toBe('echo');
    expect(paramOf({ model: 'm', prompt: 'x', seed: 1.5 })).toBe('seed');
  });

  it('refuses an output length under another name that is no whole number of tokens (n_predict: -1 is "no limit" to llama.cpp), in completions, chats and batch lines alike', () => {
    for (const field of OUTPUT_LENGTH_FIELDS) {
      for (const bad of [-1, 1.5, '3000']) {
        expect(paramOf({ model: 'm', prompt: 'x', [field]: bad }), `${field}: ${bad}`).toBe(field);
      }
      expect(paramOf({ model: 'm', prompt: 'x', options: { [field]: -1 } }), field).toBe(`options.${field}`);
      expect(() => parseOrThrow(chatRequestSchema, { model: 'm', messages: [{ role: 'user', content: 'x' }], parameters: { [field]: -1 } }), field).toThrow(/whole number of tokens/);
      // A batch line's body is read by its endpoint's schema, the route's own.
      expect(() => parseOrThrow(batchEndpoints['/v1/chat/completions']!.schema, { model: 'm', messages: [{ role: 'user', content: 'x' }], [field]: -1 }), field).toThrow(new RegExp(field));
      // A number of tokens is accepted, and held (worst-case-usage.test.ts).
      expect(paramOf({ model: 'm', prompt: 'x', max_tokens: 1, [field]: 3000 }), field).toBe('accepted');
    }
    // A null, as the SDKs send for what is unset, is no length.
    expect(paramOf({ model: 'm', prompt: 'x', n_predict: null })).toBe('accepted');
  });

  it('refuses a name a server reading names in any case would take for one the hold counts (Go folds ſ to s, K to k)', () => {
    expect(paramOf({ model: 'm', prompt: 'x', max_tokens: 1, MAX_TOKENS: 100_000 })).toBe('MAX_TOKENS');
    expect(paramOf({ model: 'm', prompt: 'x', N: 128 })).toBe('N');
    expect(paramOf({ model: 'm', prompt: 'x', Best_Of: 5 })).toBe('Best_Of');
    expect(paramOf({ model: 'm', prompt: 'x', max_tokenſ: 100_000 })).toBe('max_tokenſ');
    expect(paramOf({ model: 'm', prompt: 'x', options: { Num_Predict: 5 } })).toBe('options.Num_Predict');
    expect(() => parseOrThrow(chatRequestSchema, { model: 'm', messages: [{ role: 'user', content: 'x' }], Max_Completion_Tokens: 9 })).toThrow(/Max_Completion_Tokens/);
    // Names the hold does not count are the client's to spell as it likes.
    expect(paramOf({ model: 'm', prompt: 'x', Temperature_Note: 'x' })).toBe('accepted');
  });

  it('accepts the bounds themselves, nulls, and passes unknown fields through', () => {
    const body = parse({
      model: 'm', prompt: 'x', max_tokens: 0, temperature: 2, top_p: 0, n: 2, best_of: 2, logprobs: 5,
      presence_penalty: -2, frequency_penalty: 2, stop: ['a', 'b', 'c', 'd'], suffix: null, echo: true,
      user: 'u', seed: 7, logit_bias: { '50256': -100 },
      some_vendor_field: { x: 1 },
    });
    expect(body.some_vendor_field).toEqual({ x: 1 });
    expect(paramOf({ model: 'm', prompt: 'x', stream: true, best_of: 1, stream_options: { include_usage: true } })).toBe('accepted');
  });
});
