/**
 * Tracing off, as it is by default (issue 43): with no OTEL_* variable the services start no
 * SDK, so a request sent with a client's traceparent works as ever, nothing is exported (to
 * OTLP/HTTP's default endpoint, where a receiver listens when the port is free), and its log row
 * has no trace id.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect } from 'vitest';
import OpenAI from 'openai';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';
import { startOtlpReceiver } from '@gateway/testkit';

for (const name of Object.keys(process.env)) if (name.startsWith('OTEL_')) delete process.env[name];
// OTLP/HTTP's default endpoint, where an exporter started by mistake would send.
const receiver = await startOtlpReceiver({ port: 4318 }).catch(() => undefined);
afterAll(() => receiver?.close());

const it = stackTest({ database: true, workers: ['completion-worker'] });

describe('tracing off', () => {
  it('exports no span, and requests work as ever with no trace id in their rows', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai({ text: 'untraced' });
    await channel(mock, ['untraced']);
    const { key } = await apiKey();
    const openai = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0 });
    const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
    const requestId = randomUUID();

    const reply = await openai.chat.completions.create({ model: 'untraced', messages: [{ role: 'user', content: 'hi' }] }, { headers: { traceparent, 'x-request-id': requestId } });
    expect(reply.choices[0]!.message.content).toBe('untraced');
    let text = '';
    for await (const chunk of await openai.chat.completions.create({ model: 'untraced', messages: [{ role: 'user', content: 'hi' }], stream: true }, { headers: { traceparent } })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('untraced');

    const row = await loggedRow(stack, requestId);
    expect(row.status).toBe(200);
    expect(row.trace_id).toBeUndefined();
    // An SDK's batch processor sends within 5 s of a span's end (its default delay): nothing by then is nothing at all.
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    expect(receiver?.spans ?? []).toEqual([]);
  });
});
