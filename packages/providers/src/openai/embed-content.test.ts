import { describe, expect, it } from 'vitest';
import { geminiBatchEmbedRequest, UpstreamError } from '@gateway/contracts';
import { embedContent } from './embed-content.ts';

const batch = (...requests: object[]) => geminiBatchEmbedRequest.parse({ requests });
const text = (value: string, extra: object = {}) => ({ content: { parts: [{ text: value }] }, ...extra });

describe("Gemini's embedding request on an OpenAI-style upstream", () => {
  it('sends every text as one input, asks for floats, and outputDimensionality as dimensions', () => {
    expect(embedContent.toUpstream(batch(text('a'), text('b')), 'up-model', false)).toEqual({ model: 'up-model', input: ['a', 'b'], encoding_format: 'float' });
    expect(embedContent.toUpstream(batch(text('a', { outputDimensionality: 4 }), text('b', { outputDimensionality: 4 })), 'm', false)).toMatchObject({ dimensions: 4 });
  });

  it("refuses a batch asking different dimensions with the caller's 400, before the call", () => {
    const error = (() => {
      try {
        embedContent.toUpstream(batch(text('a', { outputDimensionality: 4 }), text('b')), 'm', false);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ kind: 'http', status: 400 });
  });

  it("returns the vectors in Gemini's order and form, base64 decoded, with the upstream's prompt tokens", () => {
    const floats = new Float32Array([0.5, -0.25]);
    const reply = embedContent.fromReply(
      { object: 'list', data: [{ index: 1, embedding: Buffer.from(floats.buffer).toString('base64') }, { index: 0, embedding: [1, 2] }], usage: { prompt_tokens: 7, total_tokens: 7 } },
      batch(text('a'), text('b')),
    );
    expect(reply).toEqual({ embeddings: [{ values: [1, 2] }, { values: [0.5, -0.25] }], promptTokens: 7 });
  });

  it('reports a reply with a vector missing as a protocol failure', () => {
    expect(() => embedContent.fromReply({ data: [{ index: 0, embedding: [1] }], usage: {} }, batch(text('a'), text('b')))).toThrow(/1 embeddings for 2 inputs/);
  });
});
