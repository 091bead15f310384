/**
 * OpenTelemetry traces (issue 43), end to end: the gateway, the completion worker and the batch
 * worker as real processes export over OTLP/HTTP (protobuf, the default) to a real receiver, and
 * a request made through the openai SDK is one trace across the hop, whole, streamed, failed over
 * and as a batch line, its id in
 * the request log and the console's record of it. test/traces-off.e2e.test.ts: with no OTEL_*
 * variable nothing is exported.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, describe, expect } from 'vitest';
import OpenAI, { toFile } from 'openai';
import { chromium } from 'playwright-core';
import { loggedRow, stackTest } from '@gateway/testkit/fixtures';
import { CHROMIUM_ARGS, findChromium, OTLP_KIND, OTLP_STATUS, startOtlpReceiver, type ReceivedSpan, type Stack } from '@gateway/testkit';

const receiver = await startOtlpReceiver();
const ADMIN_PASSWORD = 'root-password-for-traces';
afterAll(() => receiver.close());

const it = stackTest({
  database: true,
  workers: ['completion-worker', 'batch-worker'],
  // Spans leave each process within 100 ms of their end (the batch processor's delay).
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100', CHANNEL_FAILURES_BEFORE_COOLDOWN: '1000', ADMIN_PASSWORD },
});

const { server: SERVER, client: CLIENT, producer: PRODUCER, consumer: CONSUMER } = OTLP_KIND;
const ERROR = OTLP_STATUS.error;

let seq = 0;
const client = (stack: Stack, key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 30_000 });

/** A client's own trace context: a new trace id, and the span the gateway's server span continues. */
function clientTrace() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
}

/** The trace's spans, once the worker's processing span (ended last of the worker's) and the root's (the gateway's server span, or a batch line's) have come. */
async function traceOf(traceId: string, rootKind: number = SERVER): Promise<ReceivedSpan[]> {
  await expect.poll(() => {
    const spans = receiver.trace(traceId);
    return spans.some((s) => s.kind === rootKind) && spans.some((s) => s.kind === CONSUMER);
  }, { timeout: 15_000, interval: 100 }).toBe(true);
  return receiver.trace(traceId);
}

const one = (spans: ReceivedSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found, name).toHaveLength(1);
  return found[0]!;
};

/** What every traced request has: the gateway's spans under the client's, the worker's under the enqueue. */
function expectTheHop(spans: ReceivedSpan[], clientSpanId: string, model: string) {
  const server = spans.find((s) => s.kind === SERVER)!;
  expect(server).toMatchObject({
    service: 'gateway', name: 'POST /v1/chat/completions', parentSpanId: clientSpanId,
    attributes: { 'http.response.status_code': 200, 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model },
  });
  const admission = one(spans, 'admission');
  const enqueue = one(spans, 'enqueue');
  const waiting = one(spans, 'wait for reply');
  for (const span of [admission, enqueue, waiting]) expect(span).toMatchObject({ service: 'gateway', parentSpanId: server.spanId });
  expect(server.startNs).toBeLessThanOrEqual(admission.startNs);
  expect(enqueue.kind).toBe(PRODUCER);
  const processing = one(spans, 'process completion');
  expect(processing).toMatchObject({ service: 'completion-worker', kind: CONSUMER, parentSpanId: enqueue.spanId });
  expect(one(spans, 'wait completion')).toMatchObject({ service: 'completion-worker', parentSpanId: enqueue.spanId });
  // A wait for a channel's slot before each attempt (none of them long: no channel is full here).
  const slotWaits = spans.filter((s) => s.name === 'channel slot wait');
  expect(slotWaits.length).toBeGreaterThan(0);
  for (const wait of slotWaits) expect(wait.parentSpanId).toBe(processing.spanId);
  expect(one(spans, 'reply').parentSpanId).toBe(processing.spanId);
  return { server, processing };
}

/** The trace id the console's record of a request shows, an administrator signed in and searching by its request id. */
async function consoleTraceOf(stack: Stack, requestId: string): Promise<string | null> {
  const browser = await chromium.launch({ executablePath: (await findChromium()).executablePath, args: [...CHROMIUM_ARGS] });
  try {
    const page = await browser.newPage();
    await page.goto(`${stack.gateway.url}/admin`);
    await page.fill('#username', 'root');
    await page.fill('#password', ADMIN_PASSWORD);
    await page.click('button[type=submit]');
    await page.getByRole('link', { name: 'Request log' }).click();
    await page.fill('input[name=request_id]', requestId);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator(`tr[data-request="${requestId}"]`).click();
    return await page.locator('aside.entry-detail [data-field=trace_id]').textContent();
  } finally {
    await browser.close();
  }
}

/** Nothing of the request's content, nor its key, in any span. */
function expectNoSecrets(spans: ReceivedSpan[], ...secrets: string[]) {
  const text = JSON.stringify(spans, (_k, v) => (typeof v === 'bigint' ? String(v) : v));
  for (const secret of secrets) expect(text).not.toContain(secret);
}

describe('traces across the hop', () => {
  it('a chat request sent with a traceparent is one trace from the gateway to the upstream, with its GenAI attributes, and its log row names it', async ({ stack, upstream, channel, apiKey }) => {
    const model = `trace-${++seq}`;
    const mock = await upstream.openai({ text: 'the traced reply' });
    const made = await channel(mock, [model]);
    const { key } = await apiKey();
    const { traceId, spanId, traceparent } = clientTrace();
    const requestId = randomUUID();

    const reply = await client(stack, key).chat.completions.create(
      { model, messages: [{ role: 'user', content: 'a secret prompt' }] },
      { headers: { traceparent, 'x-request-id': requestId } },
    );
    expect(reply.choices[0]!.message.content).toBe('the traced reply');

    const spans = await traceOf(traceId);
    const { processing } = expectTheHop(spans, spanId, model);
    expect(processing.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, 'gen_ai.response.model': model,
      'gen_ai.usage.input_tokens': reply.usage!.prompt_tokens, 'gen_ai.usage.output_tokens': reply.usage!.completion_tokens,
    });
    const attempt = one(spans, `chat ${model}`);
    expect(attempt).toMatchObject({
      service: 'completion-worker', kind: CLIENT, parentSpanId: processing.spanId, status: { code: 0 },
      attributes: {
        'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': model, 'gen_ai.response.model': model,
        'gen_ai.usage.input_tokens': reply.usage!.prompt_tokens, 'gen_ai.usage.output_tokens': reply.usage!.completion_tokens,
        'gateway.channel.id': made.id,
      },
    });
    expect(attempt.attributes['gateway.upstream.first_byte_ms']).toBeGreaterThanOrEqual(0);
    expectNoSecrets(spans, 'a secret prompt', 'the traced reply', key);

    const row = await loggedRow(stack, requestId);
    expect(row.trace_id).toBe(traceId);
    const byTrace = (await stack.admin('GET', `/api/log/?trace_id=${traceId}`)).body.data.items;
    expect(byTrace.map((r: any) => r.request_id)).toEqual([requestId]);
    await expect(consoleTraceOf(stack, requestId)).resolves.toBe(traceId);
  });

  it('a streamed request is one trace too, its attempt ended with its usage', async ({ stack, upstream, channel, apiKey }) => {
    const model = `trace-${++seq}`;
    const mock = await upstream.openai({ text: 'one two three' });
    await channel(mock, [model]);
    const { key } = await apiKey();
    const { traceId, spanId, traceparent } = clientTrace();

    const stream = await client(stack, key).chat.completions.create(
      { model, messages: [{ role: 'user', content: 'stream it' }], stream: true, stream_options: { include_usage: true } },
      { headers: { traceparent } },
    );
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('one two three');

    const spans = await traceOf(traceId);
    expectTheHop(spans, spanId, model);
    expect(one(spans, `chat ${model}`).attributes).toMatchObject({ 'gen_ai.usage.output_tokens': usage!.completion_tokens });
  });

  it('a failover is two attempt spans under the job, the first failed with its status', async ({ stack, upstream, channel, apiKey }) => {
    const model = `trace-${++seq}`;
    const failing = await upstream.openai({ status: 500 });
    const good = await upstream.openai({ text: 'from the second' });
    const bad = await channel(failing, [model], { priority: 10 });
    const fine = await channel(good, [model], { priority: 0 });
    const { key } = await apiKey();
    const { traceId, spanId, traceparent } = clientTrace();

    const reply = await client(stack, key).chat.completions.create({ model, messages: [{ role: 'user', content: 'fail over' }] }, { headers: { traceparent } });
    expect(reply.choices[0]!.message.content).toBe('from the second');

    const spans = await traceOf(traceId);
    const { processing } = expectTheHop(spans, spanId, model);
    const attempts = spans.filter((s) => s.name === `chat ${model}`).sort((a, b) => Number(a.attributes['gateway.attempt']) - Number(b.attributes['gateway.attempt']));
    expect(attempts).toHaveLength(2);
    for (const attempt of attempts) expect(attempt.parentSpanId).toBe(processing.spanId);
    expect(attempts[0]).toMatchObject({
      status: { code: ERROR }, attributes: { 'gateway.channel.id': bad.id, 'http.response.status_code': 500, 'error.type': '500' },
    });
    expect(attempts[1]).toMatchObject({ status: { code: 0 }, attributes: { 'gateway.channel.id': fine.id } });
    expect(attempts[1]!.startNs).toBeGreaterThanOrEqual(attempts[0]!.endNs);
    // Each attempt waited for its channel's slot.
    expect(spans.filter((s) => s.name === 'channel slot wait')).toHaveLength(2);
  });

  it('a request refused by its worker is a failed trace, its status the client\'s', async ({ stack, apiKey }) => {
    const { key } = await apiKey();
    const { traceId, traceparent } = clientTrace();
    const failed = await client(stack, key).chat.completions.create({ model: `no-such-model-${++seq}`, messages: [{ role: 'user', content: 'hi' }] }, { headers: { traceparent } }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.NotFoundError);

    const spans = await traceOf(traceId);
    const server = spans.find((s) => s.kind === SERVER)!;
    expect(server).toMatchObject({ status: { code: ERROR }, attributes: { 'http.response.status_code': 404 } });
    expect(spans.find((s) => s.kind === CONSUMER)!.status.code).toBe(ERROR);
  });

  it('a request refused at the gateway, before any job (a bad key, an invalid body), is a trace of one failed span, its log row naming it', async ({ stack, apiKey }) => {
    const { key } = await apiKey();
    const cases = [
      { key: 'sk-no-such-key-0123456789abcdefghijklmnopqrstuvwxyz', body: { model: 'm' }, status: 401, code: 'invalid_api_key' },
      { key, body: { model: 'm', temperature: 7 }, status: 400, code: 'invalid_request' },
    ];
    for (const c of cases) {
      const { traceId, spanId, traceparent } = clientTrace();
      const requestId = `refused-trace-${++seq}`;
      const failed = await client(stack, c.key).chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], ...c.body } as never, { headers: { traceparent, 'x-request-id': requestId } }).catch((error: unknown) => error);
      expect((failed as InstanceType<typeof OpenAI.APIError>).status).toBe(c.status);
      await expect.poll(() => receiver.trace(traceId).length, { timeout: 15_000, interval: 100 }).toBe(1);
      expect(receiver.trace(traceId)[0]).toMatchObject({
        service: 'gateway', kind: SERVER, name: 'POST /v1/chat/completions', parentSpanId: spanId,
        status: { code: ERROR }, attributes: { 'http.response.status_code': c.status, 'error.type': c.code },
      });
      await expect.poll(async () => (await stack.adminData('GET', `/api/log/?request_id=${requestId}`)).items[0]?.trace_id, { timeout: 15_000 }).toBe(traceId);
    }
    expectNoSecrets(receiver.spans, cases[0]!.key, key);
  });

  it('a batch line is a trace of its own, from the batch worker to the upstream, its log row naming it', async ({ stack, upstream, channel, apiKey }) => {
    const model = `trace-${++seq}`;
    const mock = await upstream.openai({ text: 'a batch answer' });
    await channel(mock, [model]);
    const { key } = await apiKey();
    const openai = client(stack, key);
    const body = { custom_id: 'only', method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: 'a batch prompt' }] } };
    const file = await openai.files.create({ file: await toFile(Buffer.from(`${JSON.stringify(body)}\n`), 'batch.jsonl'), purpose: 'batch' });
    const batch = await openai.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await expect.poll(async () => (await openai.batches.retrieve(batch.id)).status, { timeout: 30_000, interval: 200 }).toBe('completed');

    let line: ReceivedSpan | undefined;
    await expect.poll(() => (line = receiver.spans.find((s) => s.name === 'batch line' && s.attributes['gateway.batch.id'] === batch.id)), { timeout: 15_000, interval: 100 }).toBeDefined();
    expect(line).toMatchObject({ service: 'batch-worker', kind: PRODUCER, attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model, 'gateway.batch.line': expect.any(Number) } });
    expect(line!.parentSpanId).toBeUndefined();
    const spans = await traceOf(line!.traceId, PRODUCER);
    const processing = one(spans, 'process completion');
    expect(processing).toMatchObject({ service: 'completion-worker', parentSpanId: line!.spanId, attributes: { 'gen_ai.response.model': model } });
    expect(one(spans, `chat ${model}`).parentSpanId).toBe(processing.spanId);
    expectNoSecrets(spans, 'a batch prompt', 'a batch answer', key);

    // The worker writes its row in batches, off the reply path.
    await expect.poll(async () => (await stack.admin('GET', `/api/log/?batch_id=${batch.id}`)).body.data.items.map((row: any) => row.trace_id), { timeout: 15_000, interval: 250 })
      .toEqual([line!.traceId]);
  });
});
