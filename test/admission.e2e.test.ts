/**
 * Admission before the queue: per-key rate limits across gateway processes, batch work that
 * yields to interactive work, and a backlog too long to serve in time refused at once.
 */
import { describe, expect } from 'vitest';
import { Redis } from 'ioredis';
import { QUEUE_PREFIX, QueueName } from '@gateway/contracts';
import { startMockOpenAIUpstream, type MockOpenAIUpstream, type ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['completion-worker'], env: { COMPLETION_CONCURRENCY: '1', REQUEST_TIMEOUT_MS: '20000' } });

/** One upstream behind one channel for the whole file: each test resets it or sets its behaviour. */
let mock: MockOpenAIUpstream;
let secondGateway: ServiceProcess;
let redis: Redis;

it.beforeAll(async ({ stack }) => {
  mock = await startMockOpenAIUpstream();
  secondGateway = await stack.add('gateway');
  redis = new Redis(stack.redis.url);
  const channel = await stack.admin('POST', '/api/channel/', { name: 'only', type: 'openai', key: 'sk-up', base_url: mock.url, models: ['m'] });
  expect(channel.status).toBe(200);
});
it.afterAll(async () => {
  redis?.disconnect();
  await mock?.close();
});

/** Jobs waiting in the completion queue, interactive (wait list) and batch (prioritized set) alike. */
async function waitingJobs(): Promise<number> {
  const queue = `${QUEUE_PREFIX}:${QueueName.completion}`;
  return (await redis.llen(`${queue}:wait`)) + (await redis.zcard(`${queue}:prioritized`));
}

function complete(base: string, key: string, headers: Record<string, string> = {}, prompt = 'hi') {
  return fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'm', prompt }),
  });
}

describe('per-key rate limit', () => {
  it('holds across two gateway processes and refuses without enqueueing', async ({ stack, apiKey }) => {
    mock.reset();
    const { key: limited } = await apiKey({ rpm_limit: 6 });
    const responses = await Promise.all(
      Array.from({ length: 14 }, (_, i) => complete(i % 2 ? stack.gateway.url : secondGateway.url, limited)),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    const refused = responses.find((r) => r.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as any).error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limited' });
    expect(mock.requests).toHaveLength(6);
    // Another key is not held back by this one.
    expect((await complete(stack.gateway.url, (await apiKey()).key)).status).toBe(200);
  });
});

describe('priorities', () => {
  it('runs interactive requests before a backlog of batch requests', async ({ stack, apiKey }) => {
    mock.reset();
    mock.setBehaviour({ delayMs: 40 });
    const { key: batchKey } = await apiKey({ priority: 'batch' });
    const { key: interactiveKey } = await apiKey();
    const finished: string[] = [];
    const track = (label: string, response: Promise<Response>) => response.then((r) => {
      expect(r.status).toBe(200);
      finished.push(label);
    });
    // One worker slot: the batch backlog forms; half of it marked by header, half by the key's default.
    const batch = Array.from({ length: 12 }, (_, i) =>
      track('batch', i % 2 ? complete(stack.gateway.url, interactiveKey, { 'x-priority': 'batch' }) : complete(stack.gateway.url, batchKey)));
    // The backlog has formed once every batch request is waiting in the queue or has reached the upstream.
    await expect.poll(async () => (await waitingJobs()) + mock.requests.length).toBeGreaterThanOrEqual(batch.length);
    const interactive = Array.from({ length: 4 }, () => track('interactive', complete(stack.gateway.url, interactiveKey)));
    await Promise.all([...batch, ...interactive]);
    mock.setBehaviour({});
    const lastInteractive = finished.lastIndexOf('interactive');
    // At most the batch jobs already running (or fetched) when the interactive ones arrived finish first.
    expect(lastInteractive).toBeLessThan(9);
    expect(finished.slice(lastInteractive + 1).every((l) => l === 'batch')).toBe(true);
  });

  it('refuses an unknown X-Priority naming the header', async ({ stack, apiKey }) => {
    const response = await complete(stack.gateway.url, (await apiKey()).key, { 'x-priority': 'urgent' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).error.param).toBe('X-Priority');
  });
});

describe('admission control', () => {
  it('answers 503 with Retry-After at once when the backlog cannot be served in time', async ({ stack, apiKey }) => {
    const crowded = await stack.add('gateway', { ADMISSION_MAX_BACKLOG: '5', REQUEST_TIMEOUT_MS: '3000' });
    const worker = stack.services.find((s) => s.name === 'completion-worker')!;
    await worker.stop('SIGTERM'); // nothing drains the queue now
    const { key } = await apiKey();
    const waiting = Array.from({ length: 8 }, () => complete(crowded.url, key));
    await expect.poll(waitingJobs).toBe(waiting.length);
    // The gateway samples the backlog every 250 ms, inside its process: until a sample has seen it
    // (later on a loaded machine), a probe is admitted; it gives up after a second.
    await expect.poll(async () => (await fetch(`${crowded.url}/v1/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'probe' }), signal: AbortSignal.timeout(1000),
    }).then((r) => r.status, () => 0)), { timeout: 15_000, interval: 100 }).toBe(503);
    const started = Date.now();
    const refused = await complete(crowded.url, key);
    expect(refused.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(500);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as any).error.message).toMatch(/too long/);
    // The ones already accepted time out with a clear 504, not a hang.
    const statuses = await Promise.all(waiting.map((p) => p.then((r) => r.status)));
    expect(statuses.every((s) => s === 504)).toBe(true);
  });
});
