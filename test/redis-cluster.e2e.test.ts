/**
 * The gateway on a real Redis Cluster (3 masters, 3 replicas, from the test kit): every process
 * started with REDIS_CLUSTER_NODES and no REDIS_URL at all, so nothing can fall back to a single
 * Redis. Management, completions whole and streamed through the `openai` SDK, speech through
 * `@google/genai`, a burst against a channel with max_concurrency, `npm start` pointed at the
 * cluster, and kill -9 of the master holding the queues under load.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect } from 'vitest';
import { Cluster } from 'ioredis';
import OpenAI from 'openai';
import { QueueName } from '@gateway/contracts';
import { replyStreamKey, shardPrefixes } from '@gateway/queue';
import { GoogleGenAI } from '@google/genai';
import {
  mockSpeech, repoRoot, TEST_SECRET_KEY, startMockGeminiUpstream, startMockOpenAIUpstream,
  type MockGeminiUpstream, type MockOpenAIUpstream, type Stack,
} from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

// The completion and audio queues split into three shards, one a master.
const it = stackTest({
  redisCluster: true,
  startTimeoutMs: 90_000,
  workers: ['completion-worker', 'audio-worker'],
  env: { REQUEST_TIMEOUT_MS: '20000', QUEUE_SHARDS: '3' },
});

/** The file's upstreams, channels and key: the tests read the channels the others made and share the key's usage. */
let openaiUpstream: MockOpenAIUpstream;
let geminiUpstream: MockGeminiUpstream;
let key: string;

it.beforeAll(async ({ stack }) => {
  [openaiUpstream, geminiUpstream] = await Promise.all([startMockOpenAIUpstream(), startMockGeminiUpstream()]);
  const admin = (path: string, body: unknown) => stack.adminData('POST', path, body);
  await admin('/api/channel/', { name: 'text', type: 'openai', key: 'sk-upstream', base_url: openaiUpstream.url, models: ['text-model'] });
  await admin('/api/channel/', { name: 'narrow', type: 'openai', key: 'sk-upstream', base_url: openaiUpstream.url, models: ['narrow-model'], max_concurrency: 4 });
  await admin('/api/channel/', { name: 'speech', type: 'gemini', key: geminiUpstream.apiKey, base_url: geminiUpstream.url, models: ['tts-model'] });
  key = (await admin('/api/token/', { name: 'cluster', unlimited_quota: true })).key;
});
it.afterAll(async () => {
  await Promise.all([openaiUpstream?.close(), geminiUpstream?.close()]);
});

const openai = (stack: Stack) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });

describe('the gateway on a Redis Cluster', () => {
  it('runs the management API: users, keys and channels written and read back, a user updated', async ({ stack }) => {
    const created = await stack.admin('POST', '/api/user/', { username: 'cluster-user', password: 'cluster-password' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const updated = await stack.admin('PUT', '/api/user/', { id: created.body.data.id, display_name: 'On a cluster' });
    expect(updated.status).toBe(200);
    expect((await stack.admin('GET', `/api/user/${created.body.data.id}`)).body.data).toMatchObject({ username: 'cluster-user', display_name: 'On a cluster' });
    const channels = (await stack.admin('GET', '/api/channel/')).body.data;
    expect((channels.items ?? channels).map((c: { name: string }) => c.name).sort()).toEqual(['narrow', 'speech', 'text']);
    const login = await fetch(`${stack.gateway.url}/api/user/login`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'cluster-user', password: 'cluster-password' }),
    });
    expect(login.status).toBe(200);
  });

  it("refuses a channel aimed at any node of the cluster or at its bus port", async ({ stack, cluster }) => {
    for (const address of cluster!.seeds.split(',')) {
      const port = Number(address.split(':')[1]);
      for (const base_url of [`http://127.0.0.1:${port}`, `http://localhost:${port + 10_000}`]) {
        const answer = await stack.admin('POST', '/api/channel/', { name: 'aimed', type: 'openai', key: 'sk-x', base_url, models: ['m'] });
        expect(answer.status, base_url).toBe(400);
        expect(answer.body.message, base_url).toMatch(/own Redis/);
      }
    }
  });

  it('answers completions, whole and streamed, and charges them', async ({ stack }) => {
    const whole = await openai(stack).completions.create({ model: 'text-model', prompt: 'Say this is a test' });
    expect(whole.choices[0]?.text).toBe('This is a mock completion.');
    const chunks: string[] = [];
    for await (const chunk of await openai(stack).completions.create({ model: 'text-model', prompt: 'Say this is a test', stream: true })) {
      chunks.push(chunk.choices[0]?.text ?? '');
    }
    expect(chunks.join('')).toBe('This is a mock completion.');
    await expect.poll(async () => (await stack.admin('GET', '/api/token/')).body.data.items?.[0]?.used_quota ?? -1).toBeGreaterThan(0);
  });

  it('spreads the completion queue over three shards on three masters, every shard served', async ({ stack, cluster }) => {
    const prefixes = shardPrefixes(QueueName.completion, 3);
    const masters = await Promise.all(prefixes.map((prefix) => cluster!.masterFor(prefix)));
    expect(new Set(masters.map((m) => m.port)).size).toBe(3);
    await Promise.all(Array.from({ length: 12 }, () => openai(stack).completions.create({ model: 'text-model', prompt: 'x' })));
    const probe = new Cluster(cluster!.seeds.split(',').map((address) => ({ host: '127.0.0.1', port: Number(address.split(':')[1]) })));
    try {
      // Each shard's events stream saw its jobs completed.
      const completed = await Promise.all(prefixes.map(async (prefix) => {
        const events = (await probe.xrange(`${prefix}:completion:events`, '-', '+')) as [string, string[]][];
        return events.filter(([, fields]) => fields[1] === 'completed').length;
      }));
      expect(completed.every((n) => n > 0), JSON.stringify(completed)).toBe(true);
    } finally {
      probe.disconnect();
    }
    // The dashboard and the metrics see every shard.
    const board = (await (await fetch(`${stack.gateway.url}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${stack.adminToken}` } })).json()) as { queues: { name: string }[] };
    expect(board.queues.map((q) => q.name).sort()).toEqual(['admin', 'audio', 'completion', 's1:audio', 's1:completion', 's2:audio', 's2:completion']);
    const metrics = await fetch(`${stack.gateway.url}/metrics`, { headers: { authorization: `Bearer ${stack.adminToken}` } }).then((r) => r.text());
    expect(metrics).toMatch(/gateway_queue_jobs\{[^}]*queue="completion"[^}]*\} 0/);
    // So does the operations console, with the worker processes serving each queue.
    const overview = (await (await fetch(`${stack.gateway.url}/admin/api/overview`, { headers: { authorization: `Bearer ${stack.adminToken}` } })).json()) as any;
    const completion = overview.data.queues.find((q: any) => q.queue === 'completion');
    expect(completion.shards).toHaveLength(3);
    expect(completion.processes).toEqual([expect.objectContaining({ concurrency: expect.any(Number) })]);
    expect(metrics).toMatch(/gateway_queue_workers\{queue="completion"[^}]*\} 1/);
  });

  it("holds a key to its requests-per-minute limit", async ({ stack }) => {
    const limited = (await stack.admin('POST', '/api/token/', { name: 'rpm', unlimited_quota: true, rpm_limit: 2 })).body.data.key;
    const client = new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: limited, maxRetries: 0 });
    await client.completions.create({ model: 'text-model', prompt: 'x' });
    await client.completions.create({ model: 'text-model', prompt: 'x' });
    await expect(client.completions.create({ model: 'text-model', prompt: 'x' })).rejects.toMatchObject({ status: 429 });
  });

  it('generates speech through the audio worker', async ({ stack }) => {
    const genai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: stack.gateway.url, timeout: 20_000 } });
    const text = 'Say cheerfully: hello from a cluster';
    const reply = await genai.models.generateContent({
      model: 'tts-model',
      contents: [{ role: 'user', parts: [{ text }] }],
      config: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
    });
    const pcm = Buffer.from(reply.candidates?.[0]?.content?.parts?.[0]?.inlineData?.data ?? '', 'base64');
    expect(pcm.length).toBe(mockSpeech(text).pcmBytes);
  });

  it('holds a burst to the channel\'s max_concurrency, every request answered', async ({ stack }) => {
    openaiUpstream.setBehaviour({ delayMs: 50 });
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => openai(stack).completions.create({ model: 'narrow-model', prompt: 'x' }).then(() => 'ok', (e: Error) => e.message)));
      expect(answers.filter((a) => a === 'ok')).toHaveLength(40);
      expect(openaiUpstream.maxInFlight).toBeLessThanOrEqual(4);
    } finally {
      openaiUpstream.setBehaviour({});
    }
  }, 30_000);
});

describe('npm start on a cluster', () => {
  it('starts no embedded Redis when REDIS_CLUSTER_NODES is set, and comes up on the cluster', async ({ stack, cluster }) => {
    const scratch = mkdtempSync(join(tmpdir(), 'gw-cluster-start-'));
    const child = spawn('npm', ['run', '--silent', 'start'], {
      cwd: repoRoot, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PORT: '0', LOG_FORMAT: 'json', REDIS_URL: '', REDIS_CLUSTER_NODES: cluster!.seeds, ADMIN_TOKEN: stack.adminToken, SECRET_KEY: TEST_SECRET_KEY, QUEUE_SHARDS: '3', REDIS_DATA_DIR: join(scratch, 'redis'), SECRET_KEY_FILE: join(scratch, 'secret-key') },
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await expect.poll(() => /Gateway\s+http/.test(output) || child.exitCode !== null, { timeout: 60_000, interval: 100 }).toBe(true);
      expect(output).toMatch(/Data\s+your Redis Cluster 127\.0\.0\.1:\d+/);
      expect(existsSync(join(scratch, 'redis'))).toBe(false);
      const gateway = /Gateway\s+(\S+)/.exec(output)![1]!;
      const reply = await new OpenAI({ baseURL: `${gateway}/v1`, apiKey: key, maxRetries: 0 }).completions.create({ model: 'text-model', prompt: 'x' });
      expect(reply.choices[0]?.text).toBe('This is a mock completion.');
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(-child.pid!, 'SIGINT');
      await exited;
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 90_000);
});

/** One request of the load: its status (0 when it got no answer), and a stream's end. */
interface Outcome { status: number; ms: number; startedAt: number; endedAt: number; stream: boolean; error?: string }

/** A completion, whole or streamed; a stream counts as 200 only if it ends with [DONE] and no error event. */
let sent = 0;
async function completion(stack: Stack, stream: boolean, model: string): Promise<Outcome> {
  const startedAt = Date.now();
  const prompt = `load ${++sent}`;
  let status = 0;
  let error: string | undefined;
  try {
    const answer = await fetch(`${stack.gateway.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model, prompt, stream }), signal: AbortSignal.timeout(60_000),
    });
    status = answer.status;
    const text = await answer.text();
    if (status !== 200) error = `${answer.headers.get('retry-after') ?? 'no'} Retry-After: ${text.slice(0, 200)}`;
    else if (stream && (!text.trimEnd().endsWith('data: [DONE]') || text.includes('"error"'))) {
      status = -1;
      error = `stream cut short: ${text.slice(-200)}`;
    }
  } catch (e) {
    error = (e as Error).message;
  }
  return { status, ms: Date.now() - startedAt, startedAt, endedAt: Date.now(), stream, error };
}

describe('a master killed with SIGKILL under load', () => {
  it('costs latency, not errors: at least 99% of requests, whole, streamed and through a leased channel, answer 200, the rest a clear 503 or 504 with Retry-After; service resumes without a restart; management data stays', async ({ stack, cluster }) => {
    openaiUpstream.setBehaviour({ delayMs: 30 });
    const outcomes: Outcome[] = [];
    let stop = false;
    // Half the clients stream: their chunks go through the reply stream the dead master held.
    // Half use the channel with max_concurrency 4: their workers take and give back leases.
    const client = async (stream: boolean, model: string) => {
      while (!stop) outcomes.push(await completion(stack, stream, model));
    };
    const load = Array.from({ length: 8 }, (_, i) => client(i % 2 === 1, i < 4 ? 'text-model' : 'narrow-model'));
    await new Promise((r) => setTimeout(r, 1000)); // the load runs a second before the kill (the test's timeline)
    // The master of the gateway's reply stream and heartbeat key: it holds a completion shard
    // too (every master does), so it takes a third of the jobs, every reply and every stream
    // chunk, and the gateway's proof of life, with it.
    const ingressId = String(stack.gateway.ready.ingressId);
    const victim = await cluster!.masterFor(replyStreamKey(ingressId));
    const shardOnVictim = (await Promise.all(shardPrefixes(QueueName.completion, 3).map((p) => cluster!.masterFor(p)))).some((m) => m.port === victim.port);
    expect(shardOnVictim).toBe(true);
    // Calls of 1.5 s from a moment before the kill until the cluster is whole: their jobs are in
    // flight through the failover, their locks last renewed before the stalled check's last pass
    // on the dead master. A lock that does not outlast the failover makes the promoted replica's
    // stalled check run them again while their first run finishes (2 or 3 a run, lane-timing.ts).
    openaiUpstream.setBehaviour({ delayMs: 1500 });
    await new Promise((r) => setTimeout(r, 1600)); // the test's timeline: calls of 1.5 s in flight at the kill
    // What is left of the locks of the jobs in flight on the victim's shards (the least of them).
    const probe = new Cluster(cluster!.seeds.split(',').map((address) => ({ host: '127.0.0.1', port: Number(address.split(':')[1]) })));
    const lockLeft: number[] = [];
    try {
      for (const prefix of shardPrefixes(QueueName.completion, 3)) {
        if ((await cluster!.masterFor(prefix)).port !== victim.port) continue;
        for (const jobId of await probe.lrange(`${prefix}:completion:active`, 0, -1)) {
          const ttl = await probe.pttl(`${prefix}:completion:${jobId}:lock`);
          if (ttl > 0) lockLeft.push(ttl);
        }
      }
    } finally {
      probe.disconnect();
    }
    expect(lockLeft.length).toBeGreaterThan(0);
    const killedAt = Date.now();
    await cluster!.kill(victim);
    await cluster!.waitUntilHealthy(60_000);
    openaiUpstream.setBehaviour({ delayMs: 30 });
    // Service resumes: requests sent after the kill succeed again; keep the load on until 16 have.
    const healedAt = Date.now();
    const succeededAfter = (t: number) => outcomes.filter((o) => o.startedAt >= t && o.status === 200);
    await expect.poll(() => succeededAfter(healedAt).length, { timeout: 30_000 }).toBeGreaterThanOrEqual(16).catch(() => {
      // Asserted below, once the figures of the run are printed.
    });
    const resumedAt = Math.min(...succeededAfter(killedAt).map((o) => o.endedAt));
    stop = true;
    await Promise.all(load);
    openaiUpstream.setBehaviour({});
    // A job whose lock lapsed during the failover must not be run a second time (twice charged).
    const prompts = openaiUpstream.requests.map((r) => String(r.body.prompt)).filter((p) => p.startsWith('load '));
    const runTwice = prompts.length - new Set(prompts).size;
    const byStatus = outcomes.reduce<Record<number, number>>((acc, o) => ({ ...acc, [o.status]: (acc[o.status] ?? 0) + 1 }), {});
    const ok = outcomes.filter((o) => o.status === 200).length / outcomes.length;
    const caught = outcomes.filter((o) => o.endedAt > killedAt && o.startedAt < healedAt);
    console.log(`[fault] kill -9 of a Redis Cluster master under load: sent ${outcomes.length} (${outcomes.filter((o) => o.stream).length} streamed), ` +
      `answered 200: ${(ok * 100).toFixed(1)}%, by status ${JSON.stringify(byStatus)}, longest ${Math.max(...outcomes.map((o) => o.ms))} ms, ` +
      `${caught.filter((o) => o.ms > 2000).length} waited over 2 s, first success of a request sent after the kill ${((resumedAt - killedAt) / 1000).toFixed(1)} s after it, ` +
      `cluster healthy again after ${((healedAt - killedAt) / 1000).toFixed(1)} s, upstream calls made twice ${runTwice}, ` +
      `least lock time left at the kill ${(Math.min(...lockLeft) / 1000).toFixed(1)} s (${lockLeft.length} jobs in flight on its shards)`);
    for (const o of outcomes.filter((o) => o.status !== 200).slice(0, 5)) console.log(`[fault] not 200: ${JSON.stringify(o)}`);
    expect(succeededAfter(healedAt).length).toBeGreaterThanOrEqual(16);
    // Nothing unanswered (0) or cut short (-1), nothing but success or a clear 503/504 with Retry-After.
    const unclear = outcomes.filter((o) => o.status !== 200 && !([503, 504].includes(o.status) && !o.error?.startsWith('no ')));
    if (unclear.length > 0) {
      for (const svc of stack.services) for (const line of svc.logs.filter((l) => Number(l.level) >= 50)) console.log(svc.name, JSON.stringify(line).slice(0, 600));
    }
    expect(unclear).toEqual([]);
    expect(ok).toBeGreaterThanOrEqual(0.99);
    expect(runTwice).toBe(0);
    // The locks of the jobs caught outlasted the failover (else their runs ran twice by chance).
    expect(Math.min(...lockLeft), 'least lock time left at the kill, ms').toBeGreaterThan(healedAt - killedAt);
    // Management data is all there, and management answers. The admin queue's lane is idle: a
    // lane whose blocking connection BullMQ reopened mid-failover once never fetched again, and
    // management answered 504 for good (failover-reconnect.test.ts). How long it took is printed.
    const askedAt = Date.now();
    let listed = await stack.admin('GET', '/api/channel/');
    while (listed.status !== 200 && Date.now() - askedAt < 20_000) listed = await stack.admin('GET', '/api/channel/');
    console.log(`[fault] management answered ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill (${((Date.now() - askedAt) / 1000).toFixed(1)} s after the load ended)`);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect((listed.body.data.items ?? listed.body.data).length).toBe(3);
    expect((await stack.admin('POST', '/api/token/', { name: 'after-failover', unlimited_quota: true })).status).toBe(200);
  }, 180_000);
});
