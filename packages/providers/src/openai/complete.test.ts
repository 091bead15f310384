import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UpstreamError, type CompletionChunk, type CompletionRequest } from '@gateway/contracts';
import { startMockOpenAIUpstream, type MockOpenAIUpstream } from '@gateway/testkit';
import { callUpstream, streamUpstream } from '../call-upstream.ts';
import type { UpstreamTarget } from '../provider.ts';
import { setAddressPolicy } from '../upstream-request.ts';
import { openai } from './index.ts';

const request = (fields: Partial<CompletionRequest> = {}) => ({ model: 'what-the-client-asked-for', prompt: 'say something', ...fields }) as CompletionRequest;
const complete = (target: UpstreamTarget, body: CompletionRequest) => callUpstream(openai.completions, target, body);
const stream = (target: UpstreamTarget, body: CompletionRequest) => streamUpstream(openai.completions, target, body);

let mock: MockOpenAIUpstream;
let target: UpstreamTarget;

beforeAll(async () => {
  mock = await startMockOpenAIUpstream();
});
afterAll(() => mock.close());
beforeEach(() => {
  mock.reset();
  target = { channel: { base_url: `${mock.url}/` }, key: 'sk-channel', upstreamModel: 'gpt-3.5-turbo-instruct', timeoutMs: 2000 };
});

/** An `UpstreamError` with these fields. */
const upstreamError = (fields: Partial<UpstreamError>) => expect.objectContaining({ ...fields, constructor: UpstreamError });

const drain = async (events: AsyncGenerator<CompletionChunk>, seen: CompletionChunk[] = []) => {
  for await (const event of events) seen.push(event);
  return seen;
};

describe('openai.completions, whole', () => {
  it("returns the reply under the client's model name, with the usage fields the upstream sent and no others", async () => {
    const reply = await complete(target, request());
    expect(reply).toMatchObject({ object: 'text_completion', model: 'what-the-client-asked-for', usage: { prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 } });
    expect(reply.usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    // Sent to the channel's model with the channel's key, whatever slash ends its base_url.
    expect(mock.requests[0]).toMatchObject({ path: '/v1/completions', authorization: 'Bearer sk-channel', body: { model: 'gpt-3.5-turbo-instruct', stream: false } });
  });

  it('reports an {error} inside a 200 as the http failure it names', async () => {
    mock.setBehaviour({ okBody: { error: { message: 'overloaded', code: 503 } } });
    await expect(complete(target, request())).rejects.toEqual(upstreamError({ kind: 'http', status: 503, message: 'upstream error: overloaded' }));
  });

  it('names a failure whose body is not JSON without showing it', async () => {
    mock.setBehaviour({ status: 502, rawBody: '<html>bad gateway</html>' });
    await expect(complete(target, request())).rejects.toEqual(upstreamError({ kind: 'http', status: 502, message: 'upstream answered 502 with a body that is not JSON' }));
  });

  it('refuses an address the policy forbids, written in the URL or resolved from a name', async () => {
    setAddressPolicy({ allowPrivate: false, forbidden: [] });
    try {
      for (const base_url of [mock.url, mock.url.replace('127.0.0.1', 'localhost')]) {
        await expect(complete({ ...target, channel: { base_url } }, request())).rejects.toEqual(
          upstreamError({ kind: 'connection', message: expect.stringMatching(/^upstream address refused: .* is a private or loopback address/) }),
        );
      }
      expect(mock.requests).toHaveLength(0);
    } finally {
      setAddressPolicy({ allowPrivate: true, forbidden: [] });
    }
  });
});

describe('openai.completions, streamed', () => {
  it('yields each chunk under the client\'s model name, usage only on the chunk that carries it', async () => {
    const chunks = await drain(await stream(target, request({ stream: true })));
    expect(chunks.every((c) => c.model === 'what-the-client-asked-for')).toBe(true);
    expect(chunks.filter((c) => c.usage)).toHaveLength(1);
    expect(chunks.at(-1)?.usage).toMatchObject({ total_tokens: 7 });
    // The upstream is always asked for usage, so the stream can be charged.
    expect(mock.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('times out when the headers do not come', async () => {
    mock.setBehaviour({ hang: true });
    await expect(stream({ ...target, timeoutMs: 200 }, request({ stream: true }))).rejects.toEqual(
      upstreamError({ kind: 'timeout', message: 'the upstream did not answer within 200 ms' }),
    );
    await mock.waitFor((m) => m.aborted === 1);
  });

  it('reports a stream that breaks mid-way as a connection failure, after the chunks that came', async () => {
    mock.setBehaviour({ breakAfterChunks: 2, chunkDelayMs: 20 });
    const seen: CompletionChunk[] = [];
    await expect(drain(await stream(target, request({ stream: true })), seen)).rejects.toEqual(upstreamError({ kind: 'connection' }));
    expect(seen).toHaveLength(2);
  });

  it('stops when the caller aborts mid-stream, and the upstream sees the call go away', async () => {
    mock.setBehaviour({ chunkDelayMs: 500 });
    const controller = new AbortController();
    const events = await stream({ ...target, signal: controller.signal }, request({ stream: true }));
    expect((await events.next()).done).toBe(false);
    controller.abort();
    await expect(events.next()).rejects.toEqual(upstreamError({ kind: 'cancelled' }));
    await mock.waitFor((m) => m.aborted === 1);
  });
});
