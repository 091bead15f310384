/**
 * Failover before the first byte only, on every new door, streamed (issue 41): with two
 * channels for one model, a first channel that fails before its first event (500, a connection
 * reset before or after the headers, 429, headers and then silence) is failed over, whether the
 * door's format is the channel's or is translated, and the client gets one clean stream from
 * the second, logged under the channel that served it; a first channel that fails after its
 * first event ends the client's stream with the door's own error event (Anthropic's
 * `event: error`, Responses' `response.failed` and `error`, Gemini's error), never a silent cut
 * and never a second stream spliced on, and the key is charged what was delivered. Real Redis,
 * PostgreSQL, completion-worker and gateway processes; the test kit's mock upstreams.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GoogleGenAI } from '@google/genai';
import type { MockAnthropicUpstream, MockGeminiUpstream, MockOpenAIUpstream, Stack } from '@gateway/testkit';
import { loggedRow, stackTest, type MakeChannel, type Upstreams } from '@gateway/testkit/fixtures';

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '15000' },
  channelDefaults: { timeout_ms: 5000 },
});

let seq = 0;
const uniqueModel = () => `failover-${++seq}`;

type Door = 'messages' | 'responses' | 'gemini';
interface StreamEvent { name: string; data: Record<string, any> }

/** A streamed request through `door`, read whole: its status, its events in order, its request id. */
async function streamThrough(stack: Stack, door: Door, model: string, key: string): Promise<{ status: number; events: StreamEvent[]; requestId: string; raw: string }> {
  const requestId = `door-failover-${randomUUID()}`;
  const [path, headers, body] = {
    messages: ['/v1/messages', { 'x-api-key': key, 'anthropic-version': '2023-06-01' }, { model, max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'count' }] }],
    responses: ['/v1/responses', { authorization: `Bearer ${key}` }, { model, input: 'count', stream: true, store: false }],
    gemini: [`/v1beta/models/${model}:streamGenerateContent?alt=sse`, { 'x-goog-api-key': key }, { contents: [{ role: 'user', parts: [{ text: 'count' }] }] }],
  }[door] as [string, Record<string, string>, unknown];
  const response = await fetch(`${stack.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  const events = raw.split(/\r?\n\r?\n/).filter((block) => block.trim() !== '').map((block) => {
    const name = /^event: (.+)$/m.exec(block)?.[1] ?? '';
    const data = /^data: (.+)$/m.exec(block)?.[1];
    return { name, data: data === undefined ? {} : JSON.parse(data) as Record<string, any> };
  });
  return { status: response.status, events, requestId, raw };
}

async function usedQuota(stack: Stack, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

/** The text a door's stream delivered. */
function deliveredText(door: Door, events: StreamEvent[]): string {
  if (door === 'messages') return events.filter((e) => e.name === 'content_block_delta').map((e) => e.data.delta.text).join('');
  if (door === 'responses') return events.filter((e) => e.name === 'response.output_text.delta').map((e) => e.data.delta).join('');
  return events.flatMap((e) => e.data.candidates?.[0]?.content?.parts ?? []).map((p: { text?: string }) => p.text ?? '').join('');
}

type Failure = 500 | 'reset' | 429;
type Mock = MockAnthropicUpstream | MockOpenAIUpstream | MockGeminiUpstream;

type Provider = 'openai' | 'anthropic' | 'gemini';
/** Each door on channels of its own format (passed through) and of one it is translated to. */
const PROVIDERS: Record<Door, Provider[]> = { messages: ['anthropic', 'openai'], responses: ['openai', 'anthropic'], gemini: ['gemini', 'openai'] };

/**
 * Two channels of `provider` for one model: the first (priority 10) scripted to fail its next
 * request with `failure` before its first event, the second healthy.
 */
async function pair(provider: Provider, failure: Failure, upstream: Upstreams, channel: MakeChannel, model: string) {
  const text = 'from the second channel';
  let failing: Mock;
  let healthy: Mock;
  if (provider === 'gemini') {
    failing = await upstream.gemini();
    healthy = await upstream.gemini({ text });
    // A reset here is of the connection, before any answer.
    (failing as MockGeminiUpstream).failNext(1, failure);
  } else {
    failing = provider === 'anthropic' ? await upstream.anthropic() : await upstream.openai();
    healthy = provider === 'anthropic' ? await upstream.anthropic({ text }) : await upstream.openai({ text });
    // A reset once the 200 and its headers came, before any event: only the first event counts.
    (failing as MockOpenAIUpstream).next(failure === 'reset' ? { breakAfterChunks: 0 } : failure === 429 ? { status: 429, retryAfter: 30 } : { status: 500 });
  }
  const first = await channel(failing, [model], { priority: 10 });
  const second = await channel(healthy, [model], { priority: 0 });
  return { failing, healthy, first, second, text };
}

const received = (mock: Mock) => ('received' in mock ? mock.received.length : mock.requests.length);

const DOORS: Door[] = ['messages', 'responses', 'gemini'];

describe('a first channel failing before its first event is failed over: one clean stream from the second, logged under it', () => {
  for (const door of DOORS) {
    for (const provider of PROVIDERS[door]) {
      it(`${door} on ${provider} channels: 500, a reset, 429`, async ({ stack, upstream, channel, apiKey }) => {
        const key = await apiKey();
        for (const failure of [500, 'reset', 429] as const) {
          const model = uniqueModel();
          const { failing, healthy, first, second, text } = await pair(provider, failure, upstream, channel, model);
          const { status, events, requestId, raw } = await streamThrough(stack, door, model, key.key);
          const label = `${door} on ${provider} after ${failure}: ${raw.slice(0, 400)}`;
          expect(status, label).toBe(200);
          expect(received(failing), label).toBe(1);
          expect(received(healthy), label).toBe(1);
          expect(deliveredText(door, events), label).toBe(text);
          if (door === 'messages') {
            expect(events.filter((e) => e.name === 'message_start'), label).toHaveLength(1);
            expect(events.map((e) => e.name).at(-1), label).toBe('message_stop');
            expect(events.some((e) => e.name === 'error'), label).toBe(false);
          } else if (door === 'responses') {
            expect(events.filter((e) => e.name === 'response.created'), label).toHaveLength(1);
            expect(events.map((e) => e.name).at(-1), label).toBe('response.completed');
            expect(events.some((e) => e.name === 'error' || e.name === 'response.failed'), label).toBe(false);
          } else {
            expect(events.every((e) => e.data.error === undefined), label).toBe(true);
            expect(events.at(-1)!.data.candidates[0].finishReason, label).toBe('STOP');
          }
          const row = await loggedRow(stack, requestId);
          expect(row, label).toMatchObject({ status: 200, streamed: true, channel_id: second.id });
          expect(row.attempts.map((a: { channel_id: number }) => a.channel_id), label).toEqual([first.id, second.id]);
        }
      });
    }
  }
});

/** A server for a channel's base_url that resets every connection, or answers 200 and its headers and then nothing. */
async function misbehaving(how: 'reset' | 'silent', onCleanup: (close: () => void) => void): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (how === 'reset') return void req.socket.destroy();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

describe('a first channel that resets the connection outright, or sends its headers and then nothing until its time-out', () => {
  for (const door of ['messages', 'responses'] as const) {
    it(`${door}: is failed over, the client answered by the second alone`, async ({ stack, upstream, channel, apiKey, onTestFinished }) => {
      const key = await apiKey();
      for (const how of ['reset', 'silent'] as const) {
        const model = uniqueModel();
        const bad = await misbehaving(how, onTestFinished);
        const type = door === 'messages' ? 'anthropic' : 'openai';
        const first = await stack.adminData('POST', '/api/channel/', { name: `${how}-${model}`, type, key: 'sk-up', base_url: bad.url, models: [model], priority: 10, timeout_ms: 1500 });
        const healthy = door === 'messages' ? await upstream.anthropic({ text: 'from the second channel' }) : await upstream.openai({ text: 'from the second channel' });
        const second = await channel(healthy, [model], { priority: 0 });
        const { status, events, requestId, raw } = await streamThrough(stack, door, model, key.key);
        const label = `${door} after ${how}: ${raw.slice(0, 400)}`;
        expect(status, label).toBe(200);
        expect(bad.hits(), label).toBe(1);
        expect(deliveredText(door, events), label).toBe('from the second channel');
        expect(events.filter((e) => e.name === (door === 'messages' ? 'message_start' : 'response.created')), label).toHaveLength(1);
        const row = await loggedRow(stack, requestId);
        expect(row, label).toMatchObject({ status: 200, channel_id: second.id });
        expect(row.attempts.map((a: { channel_id: number }) => a.channel_id), label).toEqual([first.id, second.id]);
      }
    });
  }
});

/** A mock of `provider` whose stream breaks its connection after its first two words, and a healthy one. */
async function cutAfterTwoWords(provider: Provider, upstream: Upstreams): Promise<[Mock, Mock]> {
  const text = 'one two three four five six';
  if (provider === 'gemini') return [await upstream.gemini({ text, breakAfterEvents: 2, streamIntervalMs: 100 }), await upstream.gemini({ text: 'from the backup' })];
  // message_start, content_block_start and ping, then two words.
  if (provider === 'anthropic') return [await upstream.anthropic({ text, breakAfterChunks: 5, chunkDelayMs: 100 }), await upstream.anthropic({ text: 'from the backup' })];
  // The role's chunk, then two words.
  return [await upstream.openai({ text, breakAfterChunks: 3, chunkDelayMs: 100 }), await upstream.openai({ text: 'from the backup' })];
}

describe('a first channel failing after its first event ends the stream with the door\'s error event, charged what was delivered', () => {
  for (const door of DOORS) {
    for (const provider of PROVIDERS[door]) {
      it(`${door} on ${provider} channels: the upstream cut after two words`, async ({ stack, upstream, channel, apiKey }) => {
        const model = uniqueModel();
        const [cutting, backup] = await cutAfterTwoWords(provider, upstream);
        const served = await channel(cutting, [model], { priority: 10 });
        await channel(backup, [model], { priority: 0 });
        const key = await apiKey({ unlimited_quota: false, remain_quota: 10_000 });
        const { status, events, requestId, raw } = await streamThrough(stack, door, model, key.key);
        expect(status, raw).toBe(200);
        // The first two words reached the client, then the door's error, and nothing after it.
        expect(deliveredText(door, events).split(/\s+/).filter(Boolean), raw).toEqual(['one', 'two']);
        const names = events.map((e) => e.name);
        if (door === 'messages') {
          expect(names.filter((n) => n === 'message_start'), raw).toHaveLength(1);
          expect(names.at(-1), raw).toBe('error');
          expect(events.at(-1)!.data).toMatchObject({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
          expect(names, raw).not.toContain('message_stop');
        } else if (door === 'responses') {
          expect(names.filter((n) => n === 'response.created'), raw).toHaveLength(1);
          expect(names.slice(-2), raw).toEqual(['response.failed', 'error']);
          expect(names, raw).not.toContain('response.completed');
        } else {
          expect(events.at(-1)!.data.error, raw).toMatchObject({ code: expect.any(Number), message: expect.any(String), status: expect.any(String) });
          expect(events.some((e) => e.data.candidates?.[0]?.finishReason), raw).toBe(false);
        }
        // Not failed over once an event was out: the backup never called.
        expect(received(backup)).toBe(0);
        const row = await loggedRow(stack, requestId);
        expect(row).toMatchObject({ streamed: true, channel_id: served.id });
        expect(row.status).not.toBe(200);
        // The charge is what was delivered: the prompt and the two words written, nothing held back.
        await expect.poll(() => usedQuota(stack, key.id)).toBeGreaterThan(0);
        expect(row.completion_tokens, JSON.stringify(row)).toBe(2);
        expect(await usedQuota(stack, key.id)).toBe(row.prompt_tokens + row.completion_tokens);
      });
    }
  }

  it('responses: a stored response cut after its first event is kept failed, with its error, under the id its stream gave', async ({ stack, upstream, channel, apiKey }) => {
    const model = uniqueModel();
    await channel((await cutAfterTwoWords('openai', upstream))[0], [model]);
    const { key } = await apiKey();
    const raw = await (await fetch(`${stack.gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, input: 'count', stream: true }),
    })).text();
    const id = /"id":"(resp_[0-9a-f]+)"/.exec(raw)![1]!;
    expect(raw).toContain('event: response.failed');
    // Before, only a background run's failure was kept: this id, announced by response.created, was a 404.
    const kept = await new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 }).responses.retrieve(id);
    expect(kept).toMatchObject({ id, status: 'failed', error: { code: 'upstream_error', message: expect.any(String) } });
  });

  it('each door\'s own SDK sees the cut as an error, its text so far kept, never as a whole answer', async ({ stack, upstream, channel, apiKey }) => {
    const { key } = await apiKey();
    const [messagesModel, responsesModel, geminiModel] = [uniqueModel(), uniqueModel(), uniqueModel()];
    await channel((await cutAfterTwoWords('anthropic', upstream))[0], [messagesModel]);
    await channel((await cutAfterTwoWords('openai', upstream))[0], [responsesModel]);
    await channel((await cutAfterTwoWords('gemini', upstream))[0], [geminiModel]);

    const messages = new Anthropic({ baseURL: stack.gateway.url, apiKey: key, maxRetries: 0 }).messages.stream({ model: messagesModel, max_tokens: 50, messages: [{ role: 'user', content: 'count' }] });
    let text = '';
    messages.on('text', (delta) => { text += delta; });
    await expect(messages.finalMessage()).rejects.toMatchObject({ error: { type: 'error', error: { type: expect.any(String) } } });
    expect(text).toBe('one two');

    const responses = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 }).responses.stream({ model: responsesModel, input: 'count', store: false });
    text = '';
    responses.on('response.output_text.delta', (event) => { text += event.delta; });
    await expect(responses.finalResponse()).rejects.toBeInstanceOf(Error);
    expect(text).toBe('one two');

    text = '';
    const gemini = async () => {
      const stream = await new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url } }).models.generateContentStream({ model: geminiModel, contents: 'count' });
      for await (const chunk of stream) text += chunk.text ?? '';
    };
    await expect(gemini()).rejects.toBeInstanceOf(Error);
    expect(text.trim()).toBe('one two');
  });
});
