/**
 * The relay between a model route and its worker, in process: the real gateway (`app.inject`,
 * and one real socket for a client that goes away) and a real job worker on the completion
 * queue, over a test Redis. The worker's handler plays the completion worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError, QueueName, type CompletionJobPayload } from '@gateway/contracts';
import { createLogger } from '@gateway/log';
import { startJobWorker, type JobContext, type JobWorker } from '@gateway/queue';
import { useTestGateway } from '../../test/test-gateway.ts';

const gateway = useTestGateway();
let worker: JobWorker;
/** Requests whose job began to hang, and those whose handler then saw its signal abort. */
const hanging: string[] = [];
const cancelled: string[] = [];

const completion = (text: string) => ({ id: 'cmpl-relay', object: 'text_completion', created: 1, model: 'relay-model', choices: [{ text, index: 0, logprobs: null, finish_reason: 'stop' }] });

/** What the prompt asks for: a whole answer, three chunks, a failure (at once or after a chunk), or to hang until cancelled. */
async function handler({ payload, stream, sendChunk, signal, requestId }: JobContext<CompletionJobPayload>): Promise<unknown> {
  const prompt = String((payload.request as { prompt?: unknown }).prompt);
  if (prompt === 'fail') throw new GatewayError({ status: 429, code: 'rate_limited', message: 'the upstream is busy', retryAfter: 7 });
  if (prompt === 'fail midway') {
    await sendChunk(JSON.stringify(completion('one')));
    throw new GatewayError({ status: 502, code: 'upstream_error', message: 'the upstream broke off' });
  }
  if (prompt === 'hang') {
    hanging.push(requestId);
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    cancelled.push(requestId);
    return completion('never sent');
  }
  if (stream) {
    for (const word of ['one', 'two', 'three']) await sendChunk(JSON.stringify(completion(word)));
    return null;
  }
  return completion(`answer to ${prompt}`);
}

beforeAll(async () => {
  worker = await startJobWorker<CompletionJobPayload>({
    queue: QueueName.completion, redisTarget: gateway.server.url, concurrency: 4, handler, log: createLogger('worker', 'silent'),
  });
});
afterAll(async () => {
  await worker.close();
});

const post = (body: object) => gateway.app.inject({
  method: 'POST', url: '/v1/completions', payload: body,
  headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' },
});

describe('model relay', () => {
  it('answers with the worker\'s result as it was written, and the request id', async () => {
    const reply = await post({ model: 'relay-model', prompt: 'life' });
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.json()).toEqual(completion('answer to life'));
    expect(reply.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('relays a stream as server-sent events, chunk by chunk in order, then [DONE]', async () => {
    const reply = await post({ model: 'relay-model', prompt: 'count', stream: true });
    expect(reply.statusCode).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = reply.body.split('\n\n').filter(Boolean);
    expect(events.slice(0, 3).map((e) => JSON.parse(e.replace(/^data: /, '')).choices[0].text)).toEqual(['one', 'two', 'three']);
    expect(events.slice(3)).toEqual(['data: [DONE]']);
  });

  it('answers a failure before the first chunk as an error reply, with its status and retry header', async () => {
    for (const stream of [false, true]) {
      const reply = await post({ model: 'relay-model', prompt: 'fail', stream });
      expect(reply.statusCode).toBe(429);
      expect(reply.headers['retry-after']).toBe('7');
      expect(reply.json()).toEqual({ error: { message: 'the upstream is busy', type: 'rate_limit_error', param: null, code: 'rate_limited' } });
    }
  });

  it('ends a stream that fails after its first chunk with an error event, and no [DONE]', async () => {
    const reply = await post({ model: 'relay-model', prompt: 'fail midway', stream: true });
    expect(reply.statusCode).toBe(200);
    const events = reply.body.split('\n\n').filter(Boolean).map((event) => JSON.parse(event.replace(/^data: /, '')));
    expect(events).toEqual([completion('one'), { error: { message: 'the upstream broke off', type: 'server_error', param: null, code: 'upstream_error' } }]);
  });

  it('cancels the worker\'s job when the client goes away', async () => {
    const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    const requestId = `relay-gone-${Date.now()}`;
    const client = new AbortController();
    const answered = fetch(`${url}/v1/completions`, {
      method: 'POST', signal: client.signal, body: JSON.stringify({ model: 'relay-model', prompt: 'hang' }),
      headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json', 'x-request-id': requestId },
    }).catch((error: Error) => error.name);
    // The job is running once the worker holds it; then the client hangs up.
    await expect.poll(() => hanging).toContain(requestId);
    client.abort();
    expect(await answered).toBe('AbortError');
    await expect.poll(() => cancelled).toContain(requestId);
  });
});
