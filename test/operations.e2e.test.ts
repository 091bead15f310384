/**
 * What operators rely on: metrics, health ports, and a request id that follows one request
 * across processes.
 */
import { describe, expect } from 'vitest';
import { freePort } from '@gateway/local-stack';
import type { ServiceProcess } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest();

/** A second admin worker with a metrics port of its own, which the shutdown test stops. */
let worker: ServiceProcess;
let workerPort: number;

it.beforeAll(async ({ stack }) => {
  workerPort = await freePort();
  worker = await stack.add('admin-worker', { METRICS_PORT: String(workerPort) });
});

describe('metrics', () => {
  it('serves the gateway metrics to administrators only', async ({ stack }) => {
    expect((await fetch(stack.gateway.url + '/metrics')).status).toBe(401);
    await stack.admin('POST', '/api/user/', { username: 'viewer', password: 'viewer-password' });
    const login = await fetch(stack.gateway.url + '/api/user/login', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":"viewer","password":"viewer-password"}',
    });
    const token = ((await login.json()) as any).data.access_token;
    expect((await fetch(stack.gateway.url + '/metrics', { headers: { authorization: `Bearer ${token}` } })).status).toBe(403);

    const response = await fetch(stack.gateway.url + '/metrics', { headers: { authorization: `Bearer ${stack.adminToken}` } });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/gateway_http_requests_total\{[^}]*route="\/api\/user\/"[^}]*status="200"[^}]*\} \d+/);
    expect(text).toMatch(/gateway_http_request_duration_seconds_bucket/);
    expect(text).toMatch(/gateway_queue_jobs\{[^}]*queue="admin"[^}]*state="waiting"[^}]*\} 0/);
  });

  it('serves each worker its own health and metrics port', async ({ stack }) => {
    for (let i = 0; i < 20; i++) await stack.admin('GET', '/api/user/self');
    const health = await fetch(`http://127.0.0.1:${workerPort}/healthz`);
    expect(health.status).toBe(200);
    const text = await (await fetch(`http://127.0.0.1:${workerPort}/metrics`)).text();
    expect(text).toMatch(/worker_jobs_total\{[^}]*queue="admin"[^}]*outcome="ok"[^}]*\} \d+/);
    expect(text).toMatch(/worker_job_duration_seconds_count/);
  });
});

describe('upstream metrics', () => {
  it('counts upstream calls by channel, errors, failovers and usage on the completion worker', async ({ stack, upstream, channel, apiKey }) => {
    const port = await freePort();
    await stack.add('completion-worker', { METRICS_PORT: String(port) });
    const failing = await upstream.openai({ status: 500 });
    const healthy = await upstream.openai();
    const bad = await channel(failing, ['metered'], { name: 'bad', priority: 10 });
    const good = await channel(healthy, ['metered'], { name: 'good' });
    const { key } = await apiKey();
    const response = await fetch(stack.gateway.url + '/v1/completions', {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"model":"metered","prompt":"hello world"}',
    });
    expect(response.status).toBe(200);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(text).toMatch(new RegExp(`worker_upstream_errors_total\\{[^}]*channel="${bad.id}"[^}]*status="500"[^}]*\\} 1`));
    expect(text).toMatch(new RegExp(`worker_upstream_duration_seconds_count\\{[^}]*channel="${good.id}"[^}]*\\} 1`));
    expect(text).toMatch(/worker_failovers_total\{[^}]*queue="completion"[^}]*\} 1/);
    expect(text).toMatch(/worker_usage_tokens_total\{[^}]*queue="completion"[^}]*\} 7/);
  });
});

describe('channel and queue metrics', () => {
  it('shows a channel\'s slots filling to its max_concurrency, its state, and each queue\'s workers and finished jobs', async ({ stack, upstream, channel, apiKey }) => {
    const slow = await upstream.openai({ delayMs: 1500 });
    // Named, so that the metrics are seen to label a channel by its id, not its name.
    const limited = await channel(slow, ['slots'], { name: 'limited', max_concurrency: 2, tag: 'metrics' });
    const { key } = await apiKey();
    const metrics = async () => (await fetch(stack.gateway.url + '/metrics', { headers: { authorization: `Bearer ${stack.adminToken}` } })).text();
    const value = (text: string, name: string, labels: string) => Number(new RegExp(`${name}\\{${labels}[^}]*\\} (\\d+)`).exec(text)?.[1] ?? NaN);
    const finishedBefore = value(await metrics(), 'gateway_queue_jobs_finished', '[^}]*queue="completion"');
    const requests = Array.from({ length: 5 }, () => fetch(stack.gateway.url + '/v1/completions', {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"model":"slots","prompt":"hi"}',
    }));
    await expect.poll(async () => value(await metrics(), 'gateway_channel_in_flight', `channel="${limited.id}"`), { timeout: 10_000 }).toBe(2);
    const text = await metrics();
    expect(value(text, 'gateway_channel_max_concurrency', `channel="${limited.id}"`)).toBe(2);
    expect(value(text, 'gateway_channel_state', `channel="${limited.id}",state="enabled"`)).toBe(1);
    expect(value(text, 'gateway_queue_workers', '[^}]*queue="completion"')).toBeGreaterThan(0);
    expect(text).not.toMatch(/channel="limited"/);
    await Promise.all(requests);
    expect(value(await metrics(), 'gateway_channel_in_flight', `channel="${limited.id}"`)).toBe(0);
    await expect.poll(async () => value(await metrics(), 'gateway_queue_jobs_finished', '[^}]*queue="completion"') - (Number.isNaN(finishedBefore) ? 0 : finishedBefore)).toBeGreaterThanOrEqual(5);
    await stack.admin('POST', '/api/channel/tag/disabled', { tag: 'metrics' });
    await expect.poll(async () => value(await metrics(), 'gateway_channel_state', `channel="${limited.id}",state="disabled"`)).toBe(1);
  });
});

describe('request tracing', () => {
  it('returns the request id and logs it in the gateway and in the worker that ran the job', async ({ stack }) => {
    const id = `trace-${Date.now()}`;
    const response = await fetch(stack.gateway.url + '/api/user/self', { headers: { authorization: `Bearer ${stack.adminToken}`, 'x-request-id': id } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(id);
    const gatewayLines = () => stack.gateway.logs.filter((l) => l.reqId === id);
    const workerLines = () => stack.services.filter((s) => s.name === 'admin-worker').flatMap((s) => s.logs).filter((l) => l.reqId === id);
    // Log lines go out through an asynchronous destination: wait for them to arrive.
    await expect.poll(() => gatewayLines().map((l) => l.msg)).toContain('request');
    await expect.poll(() => workerLines().length).toBe(1);
    expect(workerLines()).toHaveLength(1);
    expect(workerLines()[0]).toMatchObject({ msg: 'job', queue: 'admin', outcome: 'ok' });
  });

  it('gives a request without an id a fresh one, and one whose id is too long or not a plain id', async ({ stack }) => {
    const a = await fetch(stack.gateway.url + '/healthz');
    const b = await fetch(stack.gateway.url + '/healthz');
    expect(a.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
    // 3,200 characters were too long for the request log's index, and the row was lost.
    for (const sent of ['x'.repeat(129), 'a b', 'id/with/slashes', 'é']) {
      const answer = await fetch(stack.gateway.url + '/healthz', { headers: { 'x-request-id': sent } });
      expect(answer.headers.get('x-request-id'), sent.slice(0, 20)).toMatch(/^[0-9a-f-]{36}$/);
    }
    const longest = 'a.b:c-d_'.repeat(16);
    expect((await fetch(stack.gateway.url + '/healthz', { headers: { 'x-request-id': longest } })).headers.get('x-request-id')).toBe(longest);
  });
});

describe('graceful shutdown', () => {
  it('a worker stopped with SIGTERM exits cleanly and another keeps serving', async ({ stack }) => {
    const code = await worker.stop('SIGTERM');
    expect(code).toBe(0);
    expect((await stack.admin('GET', '/api/user/self')).status).toBe(200);
  });

  it('a gateway stopped with SIGTERM turns not-ready and exits cleanly', async ({ stack }) => {
    const gateway = await stack.add('gateway');
    expect((await fetch(gateway.url + '/readyz')).status).toBe(200);
    const code = await gateway.stop('SIGTERM');
    expect(code).toBe(0);
    expect(gateway.logs.some((l) => l.msg === 'shutting down')).toBe(true);
  });
});
