/**
 * The relay between a model route and its worker, in process: the real gateway (`app.inject`,
 * and one real socket for a client that goes away) and a real job worker on the completion
 * queue, over a test Redis. The worker's handler plays the completion worker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueName, type CompletionJobPayload } from '@gateway/contracts';
import { createLogger } from '@gateway/log';
import { startJobWorker, type JobContext, type JobWorker } from '@gateway/queue';
import { useTestGateway } from './test-gateway.ts';

const gateway = useTestGateway();
let worker: JobWorker;
/** Requests whose job began to hang, and those whose handler then saw its signal abort. */
const hanging: string[] = [];
const cancelled: string[] = [];

const completion = (text: string) => ({ id: 'cmpl-relay', object: 'text_completion', created: 1, model: 'relay-model', choices: [{ text, index: 0, logprobs: null, finish_reason: 'stop' }] });

/** What the prompt asks for: a whole answer, three chunks, or to hang until cancelled. */
async function handler({ payload, stream, sendChunk, signal, requestId }: JobContext<CompletionJobPayload>): Promise<unknown> {
  const prompt = String(payload.request.prompt);
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
