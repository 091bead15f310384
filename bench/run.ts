/**
 * `npm run bench`: the gateway under load, side by side with the upstream called directly, in
 * one run. Starts a private Redis, the mock OpenAI upstream (its own process), and the gateway
 * and workers as separate processes; drives load from child processes (bench/load-process.ts); prints
 * one table and writes the same figures as JSON under bench/results/.
 *
 *   npm run bench                 # everything (about four minutes)
 *   BENCH_SECONDS=5 npm run bench # shorter throughput runs
 *   BENCH_ONLY=cost,latency npm run bench  # some parts only: cost, latency, throughput, stream, burst, batch, tenants, speech, money, log, stages, traces
 *   BENCH_BATCH=2000,20000,50000 npm run bench  # the Batch API's batch sizes (run one after the other)
 *   BENCH_LOG_DAY=1000000 npm run bench     # rows of request log made before the batches (0: none)
 *   BENCH_DOOR_ROUNDS=3 npm run bench       # rounds of the doors' streamed rows (chat, Responses, Messages in turn)
 *   BENCH_INTERACTIVE=1 npm run bench       # the interactive load beside the burst at 1 connection (default 4)
 *   BENCH_VERBOSE=1 npm run bench # also the Redis commands of one request, command by command
 *   BENCH_ONLY=cost BENCH_COST_REQUESTS=200 npm run bench # the cost rows alone, over fewer requests
 *   BENCH_PROFILE=/tmp/prof npm run bench # CPU profiles of the gateway and workers (--cpu-prof) there
 *   BENCH_CLUSTER=1 npm run bench # on a Redis Cluster of 3 masters and 3 replicas, QUEUE_SHARDS=3
 *                                 # (or as set), with the Redis CPU of each master
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { configSchema } from '@gateway/config';
import { freePort } from '@gateway/local-stack';
import { repoRoot, spawnPostgres, spawnRedis, spawnRedisCluster, startOtlpReceiver, startService, type ServiceProcess } from '@gateway/testkit';
import { runBatch, postgresCpuMs, postgresMemoryMb, type BatchRun } from './batch.ts';
import { fillLogDay } from './log-day.ts';
import { percentile } from './stats.ts';
import { startMockGeminiProcess } from './mock-gemini.ts';
import { runSpeech } from './speech.ts';
import { stageTable } from './stages.ts';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const burstSize = Number(process.env.BENCH_BURST ?? 5000);
const burstLimit = 32;
const costRequests = Number(process.env.BENCH_COST_REQUESTS ?? 3000);
const streamConcurrencies = (process.env.BENCH_STREAMS ?? '50,200').split(',').map(Number);
const burstUpstreamMs = 20;
/** Bursts the two-tenant part pools its steady tenant's latencies over (BENCH_TENANT_ROUNDS). */
const tenantRounds = Number(process.env.BENCH_TENANT_ROUNDS ?? 3);
const adminToken = 'bench-root-token-0123456789';
const parts = new Set((process.env.BENCH_ONLY ?? 'cost,latency,throughput,stream,burst,batch,tenants,speech,money,log,stages,traces').split(','));
const batchSizes = (process.env.BENCH_BATCH ?? '2000,20000,50000').split(',').map(Number);
/** Rows of request log made before the batches (a day of traffic at about 12 requests a second). */
const logDayRows = Number(process.env.BENCH_LOG_DAY ?? 1_000_000);

interface Row { scenario: string; path: string; 'req/s': number | string; 'p50 ms': number | string; 'p99 ms': number | string; errors: number | string; note: string }

const progress = (text: string) => process.stderr.write(`\r\x1b[K${text}`);

interface LoadResult {
  requests: number; rps: number; p50: number; p99: number; max: number; non2xx: number; errors: number;
  timeouts: number; durationMs: number; ok: number; statusCodes: Record<string, number>;
  /** CPU the load generator spent. */
  cpuMs: number;
  /** Sequential runs only: latencies in microseconds. */
  p50us?: number; p90us?: number; p99us?: number;
  /** Sequential runs with `samples: true`: every latency, in microseconds, in the order taken. */
  samples?: number[];
}

/** CPU milliseconds a process has spent so far (user + system, from /proc). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks of 10 ms (CLK_TCK 100)
}

/**
 * Reads and writes a process has asked the kernel for so far (/proc/<pid>/io: read(2), write(2)
 * and their kin, sockets included): a count that does not move with the machine's speed, where
 * CPU time does.
 */
function ioCalls(pid: number): number {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return Number(/syscr: (\d+)/.exec(io)![1]) + Number(/syscw: (\d+)/.exec(io)![1]);
}

/**
 * The machine's CPU time in clock ticks, all cores: `steal` is time the hypervisor gave this VM's
 * virtual CPUs to someone else. A scenario that lost much of its time to steal measured the host,
 * not the gateway: the notes say how much.
 */
function machineTicks(): { total: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  return { total: fields.reduce((sum, f) => sum + f, 0), steal: fields[7] ?? 0 };
}

/** The share of the machine's CPU time stolen by the hypervisor since `before`, as a note. */
function stolenSince(before: { total: number; steal: number }): string {
  const now = machineTicks();
  const share = (now.steal - before.steal) / Math.max(1, now.total - before.total);
  return `${(100 * share).toFixed(0)}% of the machine's CPU time stolen by its hypervisor`;
}

/** Calls and microseconds per request from INFO commandstats, less the bench's own INFO and CONFIG. */
function commandTotals(info: string, requests: number): { calls: number; usec: number; byCommand: Record<string, { calls: number; usec: number }> } {
  let calls = 0;
  let usec = 0;
  const byCommand: Record<string, { calls: number; usec: number }> = {};
  for (const [, name, c, u] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (name === 'info' || name === 'config') continue;
    calls += Number(c) / requests;
    usec += Number(u) / requests;
    const seen = byCommand[name!] ?? { calls: 0, usec: 0 };
    byCommand[name!] = { calls: seen.calls + Number(c) / requests, usec: seen.usec + Number(u) / requests };
  }
  return { calls, usec, byCommand };
}

/**
 * BullMQ alone, `requests` jobs at `concurrency` (bench/bullmq-floor-process.ts): `run` times it,
 * `cleanUp` removes its queue. Its add → complete happens in one process, with no HTTP and no
 * reply between processes, so it is a lower bound on what any BullMQ hop adds.
 */
async function bullmqFloor(redisUrl: string, concurrency: number, requests = costRequests): Promise<{ run(): Promise<LoadResult>; cleanUp(): Promise<void> }> {
  const child = fork(join(repoRoot, 'bench/bullmq-floor-process.ts'), [JSON.stringify({ redisUrl, requests, concurrency })], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const message = (type: string) => new Promise<any>((resolve) => child.on('message', (m: { type: string }) => m.type === type && resolve(m)));
  await message('ready');
  return {
    run: async () => {
      const cpu = cpuMs(child.pid!);
      const result = message('result');
      child.send({ cmd: 'go' });
      const { result: r } = await result;
      return { ...r, p50: Math.round(r.p50us / 1000), p99: Math.round(r.p99us / 1000), max: 0, non2xx: 0, errors: 0, timeouts: 0, ok: r.requests, statusCodes: {}, cpuMs: cpuMs(child.pid!) - cpu };
    },
    cleanUp: () => {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ cmd: 'clean up' });
      return exited;
    },
  };
}

function load(options: Record<string, unknown>): { done: Promise<LoadResult>; stop(): void } {
  const child = fork(join(repoRoot, 'bench/load-process.ts'), [JSON.stringify(options)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const done = new Promise<LoadResult>((resolve, reject) => {
    child.on('message', (m: { type: string; result: LoadResult }) => m.type === 'result' && resolve(m.result));
    child.on('exit', (code) => code && reject(new Error(`load generator exited with ${code}`)));
  });
  return { done, stop: () => child.connected && child.send({ cmd: 'stop' }) };
}

interface StreamResult {
  streams: number; failed: number; chunks: number; wallMs: number; chunksPerSecond: number; firstChunkP50: number; firstChunkP99: number; gapP99: number;
  /** CPU of the stream generator itself. */
  cpuMs: number;
}

/** C streamed requests at once from a process of their own (bench/stream-process.ts). */
function streams(options: { url: string; headers: Record<string, string>; body: string; concurrency: number }): Promise<StreamResult> {
  const child = fork(join(repoRoot, 'bench/stream-process.ts'), [JSON.stringify(options)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.on('message', (m: { type: string; result: StreamResult }) => m.type === 'result' && resolve(m.result));
    child.on('exit', (code) => code && reject(new Error(`stream generator exited with ${code}`)));
  });
}

function startMock(): Promise<{ child: ChildProcess; url: string; control(cmd: object): Promise<Record<string, number>> }> {
  const child = fork(join(repoRoot, 'bench/mock-process.ts'), [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  let next = 0;
  const waiting = new Map<number, (stats: Record<string, number>) => void>();
  return new Promise((resolve) => {
    child.on('message', (m: { type: string; url?: string; id?: number; stats?: Record<string, number> }) => {
      if (m.type === 'ready') {
        resolve({
          child,
          url: m.url!,
          control: (cmd) => new Promise((done) => {
            const id = ++next;
            waiting.set(id, done);
            child.send({ ...cmd, id });
          }),
        });
      } else if (m.type === 'reply') {
        waiting.get(m.id!)?.(m.stats!);
        waiting.delete(m.id!);
      }
    });
  });
}

/**
 * The direct-proxy peer: Portkey's open-source gateway (`@portkey-ai/gateway`, a devDependency)
 * as a process of its own, routing to the same mock upstream with its `x-portkey-*` headers.
 */
async function startPortkey(): Promise<{ child: ChildProcess; url: string; version: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(repoRoot, 'node_modules/@portkey-ai/gateway/build/start-server.js'), `--port=${port}`, '--headless'], {
    env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'ignore', 'ignore'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const version = (JSON.parse(readFileSync(join(repoRoot, 'node_modules/@portkey-ai/gateway/package.json'), 'utf8')) as { version: string }).version;
  return { child, url, version };
}

const rssMb = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
};

/**
 * The Redis under test: one server, or (BENCH_CLUSTER=1) a cluster, whose masters are read one
 * by one: their INFO summed, their CPU shown each.
 */
const clusterMode = process.env.BENCH_CLUSTER === '1';
const redisServer = clusterMode ? undefined : await spawnRedis();
const cluster = clusterMode ? await spawnRedisCluster() : undefined;
const masters = cluster ? await cluster.masters() : [];
const redisNodes = cluster
  ? masters.map((m) => ({ name: `Redis :${m.port}`, client: new Redis(m.port, '127.0.0.1') }))
  : [{ name: 'Redis', client: new Redis(redisServer!.url) }];
const redisInfo = async (section: string) => (await Promise.all(redisNodes.map((n) => n.client.info(section)))).join('\n');
const resetRedisStats = () => Promise.all(redisNodes.map((n) => n.client.config('RESETSTAT')));
const usedMemoryMb = async () => [...(await redisInfo('memory')).matchAll(/used_memory:(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0) / 1024 / 1024;
const queueShards = clusterMode ? (process.env.QUEUE_SHARDS ?? '3') : (process.env.QUEUE_SHARDS ?? '1');
// BullMQ alone runs on one node: the one serving its hash tag.
const floorUrl = cluster ? `redis://${(await cluster.masterFor('{bench-floor}')).address}` : redisServer!.url;
const mock = await startMock();
const portkey = await startPortkey();
// The burst's upstream is a mock of its own, so the interactive load beside it does not count
// against its 32-in-flight limit.
const limited = await startMock();
// The load generator is one client address holding the whole burst open at once, against the
// gateway's default settings: the front door counts no connections.
// The Batch API's PostgreSQL (a private one, fsync off as in the tests), only when it is measured
// or read (the two-tenant part reads the request log for where the steady tenant's time went).
// With it the request log is on (its default), for every part; the `log` part compares it off.
const postgres = parts.has('batch') || parts.has('log') || parts.has('tenants') ? await spawnPostgres() : undefined;
const env = {
  ...(cluster ? { REDIS_CLUSTER_NODES: cluster.seeds } : { REDIS_URL: redisServer!.url }), QUEUE_SHARDS: queueShards, ADMIN_TOKEN: adminToken, LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  ...(postgres ? { DATABASE_URL: postgres.url } : {}),
  ...(process.env.BENCH_PROFILE ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE}` } : {}),
};
const quiet = { keepLogs: false };
const services: ServiceProcess[] = [];
try {
  progress('starting the gateway and workers…');
  services.push(await startService('admin-worker', env, 20_000, quiet));
  services.push(await startService('completion-worker', env, 20_000, quiet));
  const batchWorker = postgres ? await startService('batch-worker', env, 20_000, quiet) : undefined;
  if (batchWorker) services.push(batchWorker);
  const gateway = await startService('gateway', { ...env, ...(process.env.BENCH_GATEWAY_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_GATEWAY_NODE_OPTIONS } : {}) }, 20_000, quiet);
  services.push(gateway);

  const admin = async (method: string, path: string, body: unknown) => {
    const response = await fetch(gateway.url + path, { method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const parsed = (await response.json()) as { success: boolean; data: any; message: string };
    if (!parsed.success) throw new Error(`${path}: ${parsed.message}`);
    return parsed.data;
  };
  await admin('POST', '/api/channel/', { name: 'bench', type: 'openai', key: 'sk-bench-upstream', base_url: mock.url, models: ['bench-model', 'bench-priced'] });
  await admin('POST', '/api/channel/', { name: 'burst', type: 'openai', key: 'sk-bench-upstream', base_url: limited.url, models: ['burst-model'], max_concurrency: burstLimit });
  const key = (await admin('POST', '/api/token/', { name: 'bench', unlimited_quota: true })).key as string;

  const body = (model: string) => JSON.stringify({ model, prompt: 'Say this is a test', max_tokens: 16 });
  const through = (model: string, extra: Record<string, string> = {}, withKey = key) => ({
    url: `${gateway.url}/v1/completions`, method: 'POST', body: body(model),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${withKey}`, ...extra },
  });
  const viaPortkey = (model: string) => ({
    url: `${portkey.url}/v1/completions`, method: 'POST', body: body(model),
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-upstream', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${mock.url}/v1` },
  });
  const direct = (model: string, upstream = mock) => ({
    url: `${upstream.url}/v1/completions`, method: 'POST', body: body(model),
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-upstream' },
  });

  // The processes whose CPU the cost table and the burst account for.
  const redisPids = await Promise.all(redisNodes.map(async (n) => [n.name, Number(/process_id:(\d+)/.exec(await n.client.info('server'))?.[1])] as [string, number]));
  const serviceProcesses: [string, number][] = [
    ['gateway', gateway.child.pid!], ['completion-worker', services[1]!.child.pid!], ['admin-worker', services[0]!.child.pid!], ...redisPids,
  ];

  // Warm-up: connections, JIT, caches.
  progress('warming up…');
  await load({ ...through('bench-model'), connections: 16, amount: 2000 }).done;
  await load({ ...direct('bench-model'), connections: 16, amount: 2000 }).done;
  const redisBaseline = await usedMemoryMb();
  const overhead = (a: number, b: number) => `${(b - a >= 0 ? '+' : '')}${(b - a).toFixed(0)}`;
  const rows: Row[] = [];
  const figures: Record<string, unknown> = { at: new Date().toISOString(), seconds, burstSize, burstLimit, parts: [...parts] };

  if (parts.has('cost')) {
    // Cost per request: Redis commands and time (INFO commandstats, reset before), and the CPU of
    // every process, over the same 3,000 requests (BENCH_COST_REQUESTS) at concurrency 16.
    const processes: [string, number][] = [...serviceProcesses, ['upstream', mock.child.pid!], ['Portkey', portkey.child.pid!]];
    const costOf = async (run: () => Promise<LoadResult>) => {
      await resetRedisStats();
      const before = processes.map(([, pid]) => cpuMs(pid));
      const callsBefore = processes.map(([, pid]) => ioCalls(pid));
      const result = await run();
      const spent = processes.map(([name, pid], i) => [name, (cpuMs(pid) - before[i]!) / costRequests] as const);
      const calls = processes.map(([name, pid], i) => [name, (ioCalls(pid) - callsBefore[i]!) / costRequests] as const);
      const commands = commandTotals(await redisInfo('commandstats'), costRequests);
      return { result, commands: commands.calls, redisUs: commands.usec, byCommand: commands.byCommand, cpuMsPerRequest: [...spent, ['load generator', result.cpuMs / costRequests] as const], ioCallsPerRequest: calls };
    };
    const cannon = (run: Record<string, unknown>) => () => load({ ...run, connections: 16, amount: costRequests }).done;
    progress(`cost per request: ${costRequests} requests at concurrency 16, upstream directly…`);
    const costDirect = await costOf(cannon(direct('bench-model')));
    progress(`cost per request: ${costRequests} requests at concurrency 16, through the gateway…`);
    const costGateway = await costOf(cannon(through('bench-model')));
    progress(`cost per request: ${costRequests} requests at concurrency 16, through Portkey ${portkey.version}…`);
    await load({ ...viaPortkey('bench-model'), connections: 16, amount: 1000 }).done; // its warm-up
    const costPortkey = await costOf(cannon(viaPortkey('bench-model')));
    progress(`cost per request: ${costRequests} bare BullMQ jobs at concurrency 16 (the floor)…`);
    const floor = await bullmqFloor(floorUrl, 16);
    const costFloor = await costOf(floor.run);
    await floor.cleanUp();
    // /proc counts CPU in 10 ms ticks: 0.003 ms a request over 3,000; idle processes stay under 0.015.
    const cpuNote = (cost: typeof costGateway) => cost.cpuMsPerRequest.filter(([, ms]) => ms >= 0.015).map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ');
    const redisNote = (cost: typeof costGateway) => `${cost.commands.toFixed(1)} Redis commands, ${cost.redisUs.toFixed(0)} µs of Redis`;
    const callsNote = (cost: typeof costGateway) => `reads and writes to the kernel a request: ${cost.ioCallsPerRequest.filter(([, n]) => n >= 0.5).map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ')}`;
    const scenario = `cost per request (${costRequests} at c=16)`;
    rows.push(
      { scenario, path: 'upstream directly', 'req/s': costDirect.result.rps, 'p50 ms': costDirect.result.p50, 'p99 ms': costDirect.result.p99, errors: costDirect.result.non2xx + costDirect.result.errors, note: `CPU ms/request: ${cpuNote(costDirect)}` },
      { scenario, path: 'through the gateway', 'req/s': costGateway.result.rps, 'p50 ms': costGateway.result.p50, 'p99 ms': costGateway.result.p99, errors: costGateway.result.non2xx + costGateway.result.errors, note: `${redisNote(costGateway)}; CPU ms/request: ${cpuNote(costGateway)}; ${callsNote(costGateway)}` },
      { scenario, path: `Portkey ${portkey.version}`, 'req/s': costPortkey.result.rps, 'p50 ms': costPortkey.result.p50, 'p99 ms': costPortkey.result.p99, errors: costPortkey.result.non2xx + costPortkey.result.errors, note: `CPU ms/request: ${cpuNote(costPortkey)}; ${callsNote(costPortkey)}` },
      { scenario, path: 'BullMQ alone (floor)', 'req/s': costFloor.result.rps, 'p50 ms': '', 'p99 ms': '', errors: 0, note: `add → process → complete, nothing else: ${redisNote(costFloor)}` },
    );
    if (cluster) {
      // Each master's share of the work through the gateway (the same 3,000 requests).
      const perMaster = costGateway.cpuMsPerRequest.filter(([name]) => name.startsWith('Redis'));
      const spent = perMaster.map(([, ms]) => ms);
      const ratio = Math.max(...spent) / Math.max(0.001, Math.min(...spent));
      rows.push({ scenario, path: `Redis masters (QUEUE_SHARDS=${queueShards})`, 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `CPU ms/request: ${perMaster.map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ')}; busiest ${ratio.toFixed(2)}× the least busy` });
      figures.masters = { shards: queueShards, cpuMsPerRequest: Object.fromEntries(perMaster), busiestOverLeast: ratio };
    }
    if (process.env.BENCH_VERBOSE) {
      console.log('Redis commands per request through the gateway:', Object.fromEntries(Object.entries(costGateway.byCommand).map(([k, v]) => [k, `${v.calls.toFixed(2)} calls, ${v.usec.toFixed(1)} µs`])));
      console.log('Redis commands per request, BullMQ alone:', Object.fromEntries(Object.entries(costFloor.byCommand).map(([k, v]) => [k, `${v.calls.toFixed(2)} calls, ${v.usec.toFixed(1)} µs`])));
    }
    figures.cost = { direct: costDirect, gateway: costGateway, portkey: costPortkey, bullmqFloor: costFloor };
  }

  if (parts.has('latency')) {
    progress('latency at concurrency 1: upstream directly…');
    const latencyDirect = await load({ ...direct('bench-model'), sequential: 3000 }).done;
    progress('latency at concurrency 1: through the gateway…');
    const latencyGateway = await load({ ...through('bench-model'), sequential: 3000 }).done;
    progress(`latency at concurrency 1: through Portkey ${portkey.version}…`);
    const latencyPortkey = await load({ ...viaPortkey('bench-model'), sequential: 3000 }).done;
    progress('latency at concurrency 1: BullMQ alone…');
    const floor = await bullmqFloor(floorUrl, 1, 3000);
    const latencyFloor = await floor.run();
    await floor.cleanUp();
    const micro = (r: LoadResult) => `p50 ${r.p50us!.toFixed(0)} µs, p90 ${r.p90us!.toFixed(0)} µs, p99 ${r.p99us!.toFixed(0)} µs`;
    rows.push(
      { scenario: 'latency c=1', path: 'upstream directly', 'req/s': latencyDirect.rps, 'p50 ms': latencyDirect.p50, 'p99 ms': latencyDirect.p99, errors: latencyDirect.non2xx + latencyDirect.errors, note: micro(latencyDirect) },
      { scenario: 'latency c=1', path: 'through the gateway', 'req/s': latencyGateway.rps, 'p50 ms': latencyGateway.p50, 'p99 ms': latencyGateway.p99, errors: latencyGateway.non2xx + latencyGateway.errors, note: `${micro(latencyGateway)}; p50 overhead ${overhead(latencyDirect.p50us!, latencyGateway.p50us!)} µs` },
      { scenario: 'latency c=1', path: `Portkey ${portkey.version}`, 'req/s': latencyPortkey.rps, 'p50 ms': latencyPortkey.p50, 'p99 ms': latencyPortkey.p99, errors: latencyPortkey.non2xx + latencyPortkey.errors, note: `${micro(latencyPortkey)}; p50 overhead ${overhead(latencyDirect.p50us!, latencyPortkey.p50us!)} µs` },
      { scenario: 'latency c=1', path: 'BullMQ alone (floor)', 'req/s': latencyFloor.rps, 'p50 ms': latencyFloor.p50, 'p99 ms': latencyFloor.p99, errors: 0, note: `${micro(latencyFloor)}: add → complete in one process, no HTTP, the least any BullMQ hop adds` },
    );
    figures.latency = { direct: latencyDirect, gateway: latencyGateway, portkey: latencyPortkey, bullmqFloor: latencyFloor };
  }

  if (parts.has('throughput')) {
    progress(`throughput at concurrency 64 for ${seconds} s: upstream directly…`);
    const throughputDirect = await load({ ...direct('bench-model'), connections: 64, duration: seconds }).done;
    progress(`throughput at concurrency 64 for ${seconds} s: through the gateway…`);
    const throughputGateway = await load({ ...through('bench-model'), connections: 64, duration: seconds }).done;
    progress(`throughput at concurrency 64 for ${seconds} s: through Portkey ${portkey.version}…`);
    const throughputPortkey = await load({ ...viaPortkey('bench-model'), connections: 64, duration: seconds }).done;
    progress('throughput at concurrency 64: BullMQ alone…');
    const floor = await bullmqFloor(floorUrl, 64, 20_000);
    const throughputFloor = await floor.run();
    await floor.cleanUp();
    const scenario = `throughput c=64 ${seconds}s`;
    rows.push(
      { scenario, path: 'upstream directly', 'req/s': throughputDirect.rps, 'p50 ms': throughputDirect.p50, 'p99 ms': throughputDirect.p99, errors: throughputDirect.non2xx + throughputDirect.errors, note: '' },
      { scenario, path: 'through the gateway', 'req/s': throughputGateway.rps, 'p50 ms': throughputGateway.p50, 'p99 ms': throughputGateway.p99, errors: throughputGateway.non2xx + throughputGateway.errors, note: `${(100 * throughputGateway.rps / throughputDirect.rps).toFixed(0)}% of direct` },
      { scenario, path: `Portkey ${portkey.version}`, 'req/s': throughputPortkey.rps, 'p50 ms': throughputPortkey.p50, 'p99 ms': throughputPortkey.p99, errors: throughputPortkey.non2xx + throughputPortkey.errors, note: `${(100 * throughputPortkey.rps / throughputDirect.rps).toFixed(0)}% of direct; gateway ${(throughputGateway.rps / throughputPortkey.rps).toFixed(2)}× Portkey` },
      { scenario, path: 'BullMQ alone (floor)', 'req/s': throughputFloor.rps, 'p50 ms': throughputFloor.p50, 'p99 ms': throughputFloor.p99, errors: 0, note: `20,000 jobs, add → complete in one process, no HTTP: ${(throughputFloor.rps / throughputPortkey.rps).toFixed(2)}× Portkey` },
    );
    figures.throughput = { direct: throughputDirect, gateway: throughputGateway, portkey: throughputPortkey, bullmqFloor: throughputFloor };
  }

  if (parts.has('stream')) {
    // Legacy completions streamed through Portkey: shown as it answers (1.15.2 fails with "TypeError: immutable").
    const portkeyStream = await fetch(`${portkey.url}/v1/completions`, {
      method: 'POST', headers: viaPortkey('bench-model').headers, body: JSON.stringify({ model: 'bench-model', prompt: 'Count', stream: true }),
    }).then(async (r) => ({ status: r.status, text: (await r.text()).slice(0, 120) }), (e: Error) => ({ status: 0, text: e.message }));
    rows.push({ scenario: 'streaming completion', path: `Portkey ${portkey.version}`, 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: portkeyStream.status === 200 ? 0 : 1, note: portkeyStream.status === 200 ? 'streams' : `fails: ${portkeyStream.status} ${portkeyStream.text}` });

    // Streaming: C clients at once, each streaming 100 chunks 10 ms apart from the upstream.
    await mock.control({ cmd: 'behaviour', behaviour: { chunkDelayMs: 10, text: Array.from({ length: 99 }, (_, i) => `w${i}`).join(' ') } });
    const streamBody = JSON.stringify({ model: 'bench-model', prompt: 'Stream', stream: true });
    const streaming: { concurrency: number; direct: StreamResult; gateway: StreamResult; commandsPerChunk: number; cpuBusy: number }[] = [];
    for (const concurrency of streamConcurrencies) {
      progress(`streaming: ${concurrency} streams of 100 chunks 10 ms apart, upstream directly…`);
      const streamDirect = await streams({ url: direct('bench-model').url, headers: direct('bench-model').headers, body: streamBody, concurrency });
      progress(`streaming: ${concurrency} streams of 100 chunks 10 ms apart, through the gateway…`);
      await resetRedisStats();
      const streamProcesses = [...serviceProcesses, ['upstream', mock.child.pid!] as [string, number]];
      const cpuBefore = streamProcesses.map(([, pid]) => cpuMs(pid));
      const streamGateway = await streams({ url: through('bench-model').url, headers: through('bench-model').headers, body: streamBody, concurrency });
      const cpuSeconds = (streamProcesses.reduce((sum, [, pid], i) => sum + cpuMs(pid) - cpuBefore[i]!, 0) + streamGateway.cpuMs) / 1000;
      const cpuBusy = cpuSeconds / (os.availableParallelism() * streamGateway.wallMs / 1000);
      const commandsPerChunk = commandTotals(await redisInfo('commandstats'), Math.max(1, streamGateway.chunks)).calls;
      streaming.push({ concurrency, direct: streamDirect, gateway: streamGateway, commandsPerChunk, cpuBusy });
    }
    // The doors streamed the same way, at the largest concurrency, through the same openai
    // channel: chat completions (its stream has a role chunk and a finish chunk more than
    // completions'), the Responses door and the Messages door (both through the conversation
    // model; Responses not stored, so the row is the door's cost alone). Each row gives its
    // events a second and the CPU of the gateway, workers and Redis a stream, beside chat's.
    const doorConcurrency = Math.max(...streamConcurrencies);
    const doors = [
      { name: 'chat', path: '/v1/chat/completions', unit: 'chunks', body: { model: 'bench-model', messages: [{ role: 'user', content: 'Stream' }], stream: true } },
      { name: 'Responses', path: '/v1/responses', unit: 'events', body: { model: 'bench-model', input: 'Stream', stream: true, store: false } },
      { name: 'Messages', path: '/v1/messages', unit: 'events', body: { model: 'bench-model', max_tokens: 256, messages: [{ role: 'user', content: 'Stream' }], stream: true } },
    ];
    // In rounds, the doors taken in turn within each (BENCH_DOOR_ROUNDS, default 3): one run of
    // each on a 2-core machine varied by ±10% from the next, more than the doors differ; what the
    // machine does meanwhile now weighs on all three alike. Each row sums its rounds.
    const doorRounds = Number(process.env.BENCH_DOOR_ROUNDS ?? 3);
    const doorTotals = doors.map(() => ({ results: [] as StreamResult[], commands: 0, calls: 0, cpuMs: 0 }));
    for (let round = 1; round <= doorRounds; round++) {
      for (const [d, door] of doors.entries()) {
        progress(`streaming: ${doorConcurrency} ${door.name} streams of 100 chunks 10 ms apart, through the gateway (round ${round} of ${doorRounds})…`);
        await resetRedisStats();
        const cpuBefore = serviceProcesses.map(([, pid]) => cpuMs(pid));
        const result = await streams({ url: `${gateway.url}${door.path}`, headers: through('bench-model').headers, body: JSON.stringify(door.body), concurrency: doorConcurrency });
        const total = doorTotals[d]!;
        total.cpuMs += serviceProcesses.reduce((sum, [, pid], i) => sum + cpuMs(pid) - cpuBefore[i]!, 0);
        total.calls += commandTotals(await redisInfo('commandstats'), 1).calls;
        total.results.push(result);
      }
    }
    const meanOf = (results: StreamResult[], field: 'firstChunkP50' | 'firstChunkP99' | 'gapP99') => results.reduce((sum, r) => sum + r[field], 0) / results.length;
    const doorRuns = doors.map((door, d) => {
      const { results, calls, cpuMs: cpuAll } = doorTotals[d]!;
      const sum = (field: 'streams' | 'failed' | 'chunks' | 'wallMs' | 'cpuMs') => results.reduce((total, r) => total + r[field], 0);
      const result: StreamResult = {
        streams: sum('streams'), failed: sum('failed'), chunks: sum('chunks'), wallMs: sum('wallMs'), cpuMs: sum('cpuMs'),
        chunksPerSecond: (1000 * sum('chunks')) / Math.max(1, sum('wallMs')),
        firstChunkP50: meanOf(results, 'firstChunkP50'), firstChunkP99: meanOf(results, 'firstChunkP99'), gapP99: meanOf(results, 'gapP99'),
      };
      return { name: door.name, unit: door.unit, result, commands: calls / Math.max(1, result.chunks), cpuMsAStream: cpuAll / Math.max(1, result.streams - result.failed) };
    });
    await mock.control({ cmd: 'behaviour', behaviour: {} });
    await mock.control({ cmd: 'reset' });
    const completionsAtSame = streaming.find((s) => s.concurrency === doorConcurrency)!;
    const chatRun = doorRuns[0]!;
    for (const run of doorRuns) {
      const r = run.result;
      const versus = run === chatRun
        ? `${(100 * r.chunksPerSecond / completionsAtSame.direct.chunksPerSecond).toFixed(0)}% of completions direct, completions through the gateway ${(100 * completionsAtSame.gateway.chunksPerSecond / completionsAtSame.direct.chunksPerSecond).toFixed(0)}%`
        : `${(100 * r.chunksPerSecond / chatRun.result.chunksPerSecond).toFixed(0)}% of chat's chunks/s; CPU a stream ${(100 * run.cpuMsAStream / chatRun.cpuMsAStream).toFixed(0)}% of chat's`;
      rows.push({
        scenario: `${doorConcurrency} ${run.name} streams × 100 chunks, 10 ms apart, ${doorRounds} rounds`, path: 'through the gateway', 'req/s': '', 'p50 ms': r.firstChunkP50, 'p99 ms': r.firstChunkP99, errors: r.failed,
        note: `${Math.round(r.chunksPerSecond)} ${run.unit}/s (${versus}); ${run.cpuMsAStream.toFixed(1)} CPU ms a stream (gateway, workers, Redis); ${run.commands.toFixed(2)} Redis commands ${run.unit === 'chunks' ? 'a chunk' : 'an event'}; gap p99 ${r.gapP99.toFixed(1)} ms`,
      });
    }
    figures.doorStreaming = doorRuns;
    rows.push(...streaming.flatMap(({ concurrency, direct: d, gateway: g, commandsPerChunk, cpuBusy }) => [d, g].map((r, i) => ({
      scenario: `${concurrency} streams × 100 chunks, 10 ms apart`, path: i === 0 ? 'upstream directly' : 'through the gateway',
      'req/s': '', 'p50 ms': r.firstChunkP50, 'p99 ms': r.firstChunkP99, errors: r.failed,
      note: `${Math.round(r.chunksPerSecond)} chunks/s${i === 1 ? ` (${(100 * g.chunksPerSecond / d.chunksPerSecond).toFixed(0)}% of direct; ${commandsPerChunk.toFixed(2)} Redis commands a chunk; all processes ${(100 * cpuBusy).toFixed(0)}% of ${os.availableParallelism()} cores)` : ''}; first chunk p50/p99 in the ms columns; gap p99 ${r.gapP99.toFixed(1)} ms`,
    }))));
    figures.streaming = streaming;
    figures.portkeyStream = portkeyStream;
  }

  if (parts.has('burst')) {
    // The burst: every request at once, against an upstream that refuses past 32 in flight.
    await limited.control({ cmd: 'limit', limit: burstLimit, retryAfter: 1 });
    await limited.control({ cmd: 'behaviour', behaviour: { delayMs: burstUpstreamMs } });
    progress(`burst: ${burstSize} requests at once through the gateway, with interactive load beside it…`);
    let peakRss = rssMb(gateway.child.pid!);
    let peakRedis = await usedMemoryMb();
    const sampler = setInterval(async () => {
      peakRss = Math.max(peakRss, rssMb(gateway.child.pid!));
      peakRedis = Math.max(peakRedis, await usedMemoryMb());
    }, 100);
    const burstProcesses: [string, number][] = [...serviceProcesses, ['upstream', limited.child.pid!], ['interactive upstream', mock.child.pid!]];
    const cpuBefore = burstProcesses.map(([, pid]) => cpuMs(pid));
    const ticksBefore = machineTicks();
    const interactive = load({ ...through('bench-model'), connections: Number(process.env.BENCH_INTERACTIVE ?? 4), duration: 600 });
    const burstGateway = await load({ ...through('burst-model', { 'x-priority': 'batch' }), connections: burstSize, once: true, timeout: 120 }).done;
    interactive.stop();
    const interactiveResult = await interactive.done;
    // CPU seconds each process spent while the burst drained: whether two cores were the bound.
    const burstCpu = [
      ...burstProcesses.map(([name, pid], i) => [name, (cpuMs(pid) - cpuBefore[i]!) / 1000] as const),
      ['load generators', (burstGateway.cpuMs + interactiveResult.cpuMs) / 1000] as const,
    ];
    const burstCpuTotal = burstCpu.reduce((sum, [, s]) => sum + s, 0);
    const burstStolen = stolenSince(ticksBefore);
    clearInterval(sampler);
    const upstreamAfterGateway = await limited.control({ cmd: 'stats' });
    await limited.control({ cmd: 'reset' });

    await limited.control({ cmd: 'limit', limit: burstLimit, retryAfter: 1 });
    await limited.control({ cmd: 'behaviour', behaviour: { delayMs: burstUpstreamMs } });
    progress(`burst: ${burstSize} requests at once straight to the upstream…`);
    const burstDirect = await load({ ...direct('burst-model', limited), connections: burstSize, once: true, timeout: 120 }).done;
    const upstreamAfterDirect = await limited.control({ cmd: 'stats' });
    await limited.control({ cmd: 'reset' });

    await new Promise((r) => setTimeout(r, 3000)); // results expire, reply streams are trimmed
    const redisAfter = await usedMemoryMb();
    // The physical limit: 32 at a time, each taking the upstream's latency.
    const physicalS = (burstSize / burstLimit) * burstUpstreamMs / 1000;
    const scenario = `burst ${burstSize}, limit ${burstLimit}`;
    const burstNote = (r: LoadResult, upstream: Record<string, number>) =>
      `${(100 * r.ok / burstSize).toFixed(1)}% ok, ${upstream.overLimit} over-limit, ${upstream.meanInFlight.toFixed(1)} in flight on average, last reply ${(r.durationMs / 1000).toFixed(2)} s (${(100 * (r.durationMs / 1000) / physicalS).toFixed(0)}% of the physical ${physicalS.toFixed(2)} s)`;
    rows.push(
      { scenario, path: 'upstream directly', 'req/s': Math.round(burstSize / (burstDirect.durationMs / 1000)), 'p50 ms': burstDirect.p50, 'p99 ms': burstDirect.p99, errors: burstSize - burstDirect.ok, note: burstNote(burstDirect, upstreamAfterDirect) },
      { scenario, path: 'through the gateway', 'req/s': Math.round(burstSize / (burstGateway.durationMs / 1000)), 'p50 ms': burstGateway.p50, 'p99 ms': burstGateway.p99, errors: burstSize - burstGateway.ok, note: burstNote(burstGateway, upstreamAfterGateway) },
      { scenario: 'interactive c=4 during burst', path: 'through the gateway', 'req/s': interactiveResult.rps, 'p50 ms': interactiveResult.p50, 'p99 ms': interactiveResult.p99, errors: interactiveResult.non2xx + interactiveResult.errors, note: '' },
      { scenario: 'CPU during the burst', path: 'through the gateway', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `${burstCpuTotal.toFixed(1)} s CPU over ${(burstGateway.durationMs / 1000).toFixed(1)} s on ${os.availableParallelism()} cores (${(100 * burstCpuTotal / (os.availableParallelism() * burstGateway.durationMs / 1000)).toFixed(0)}% busy; ${burstStolen}): ${burstCpu.filter(([, s]) => s >= 0.05).map(([name, s]) => `${name} ${s.toFixed(1)}`).join(', ')}` },
      { scenario: 'memory', path: 'gateway RSS', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `peak ${peakRss.toFixed(0)} MB with ${burstSize} waiting` },
      { scenario: 'memory', path: 'Redis used_memory', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `before ${redisBaseline.toFixed(1)} MB, peak ${peakRedis.toFixed(1)} MB, after ${redisAfter.toFixed(1)} MB` },
    );
    figures.burst = { direct: { ...burstDirect, upstream: upstreamAfterDirect }, gateway: { ...burstGateway, upstream: upstreamAfterGateway }, interactive: interactiveResult, physicalS, cpuSeconds: Object.fromEntries(burstCpu) };
    figures.memory = { gatewayPeakRssMb: peakRss, redisBaselineMb: redisBaseline, redisPeakMb: peakRedis, redisAfterMb: redisAfter };
  }

  /** The interactive load beside a burst or a batch (BENCH_INTERACTIVE connections, 0 for none). */
  const interactiveBeside = () => {
    const connections = Number(process.env.BENCH_INTERACTIVE ?? 4);
    if (connections > 0) return load({ ...through('bench-model'), connections, duration: 600 });
    const none: LoadResult = { requests: 0, rps: 0, p50: 0, p99: 0, max: 0, non2xx: 0, errors: 0, timeouts: 0, durationMs: 0, ok: 0, statusCodes: {}, cpuMs: 0 };
    return { stop: () => {}, done: Promise.resolve(none) };
  };

  /**
   * The stage times of the request log's rows that `where` picks among those a worker ran (with
   * a queue time), once the log's last rows are written: arrival → taken by a worker, the wait
   * for a channel slot, the upstream call, arrival → end; and each row's arrival (epoch ms).
   */
  const loggedStages = async (where: string, params: unknown[]) => {
    await sleep(1500); // the log's last rows written
    const db = new pg.Client({ connectionString: postgres!.url });
    await db.connect();
    const { rows: logged } = await db.query<{ queue_ms: number; total_ms: number; slot_ms: number | null; upstream_ms: number | null; arrived_ms: number }>(
      `SELECT queue_ms, total_ms, slot_ms, upstream_ms, (extract(epoch from created_at) * 1000)::float8 AS arrived_ms FROM request_log WHERE ${where} AND queue_ms IS NOT NULL`, params);
    await db.end();
    const of = (column: 'queue_ms' | 'total_ms' | 'slot_ms' | 'upstream_ms') => logged.map((r) => r[column]).filter((v): v is number => v !== null);
    return { logged, queued: of('queue_ms'), total: of('total_ms'), slot: of('slot_ms'), upstreamMs: of('upstream_ms') };
  };

  /**
   * Where a batch line's time went, from the workers' request log (a row per line's job): from
   * the job's add to a worker taking it, waiting there for a channel slot, its upstream call, and
   * add → end; against the time each line of the window spends in flight (BATCH_WINDOW ÷ the
   * lines' rate), the rest being the batch worker's part (admission, before the job's timestamp;
   * the reply's way back and the line's row).
   */
  const batchLineTimes = async (run: BatchRun, lines: number) => {
    const { logged, queued, total, slot, upstreamMs } = await loggedStages('batch_id = $1', [run.batchId]);
    const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
    // The batch worker's own reading of BATCH_WINDOW, default included.
    const window = configSchema.shape.BATCH_WINDOW.parse(process.env.BATCH_WINDOW || undefined);
    const inFlightMs = (window * run.runningMs) / lines;
    return {
      scenario: `batch ${lines.toLocaleString('en')} lines: a line's time, from the request log`, path: 'ms, mean (p50, p99)', 'req/s': '', 'p50 ms': percentile(total, 50), 'p99 ms': percentile(total, 99), errors: '',
      note: `${logged.length} rows: add → taken by a worker ${mean(queued).toFixed(1)} (${percentile(queued, 50)}, ${percentile(queued, 99)}); waiting for a slot ${mean(slot).toFixed(1)} (${percentile(slot, 50)}, ${percentile(slot, 99)}); ` +
        `upstream ${mean(upstreamMs).toFixed(1)} (${percentile(upstreamMs, 50)}, ${percentile(upstreamMs, 99)}); add → end ${mean(total).toFixed(1)}; ` +
        `in flight in the window ${inFlightMs.toFixed(1)} (${window} lines ÷ their rate), so ${(inFlightMs - mean(total)).toFixed(1)} in the batch worker's part (admission before the job's timestamp, the reply's way back, the line's row)`,
    };
  };

  if (parts.has('batch')) {
    // The same work as the burst, brought as batch users bring it: one file, one batch, through
    // the Batch API, on the burst's channel (32 slots, 20 ms), with the interactive load beside it.
    const user = await admin('POST', '/api/user/', { username: 'bench-batch', password: 'bench-batch-password' });
    const batchKey = (await admin('POST', '/api/token/', { name: 'batch', user_id: user.id, unlimited_quota: true })).key as string;
    const memoryOf = {
      gateway: () => rssMb(gateway.child.pid!),
      'batch worker': () => rssMb(batchWorker!.child.pid!),
      'completion worker': () => rssMb(services[1]!.child.pid!),
      Redis: usedMemoryMb,
      PostgreSQL: () => postgresMemoryMb(postgres!.pid),
    };
    if (logDayRows > 0) {
      progress(`batch: a day of request log (${logDayRows.toLocaleString('en')} rows) before the batches…`);
      const one = await fetch(`${gateway.url}/v1/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body('bench-model') });
      if (!one.ok) throw new Error(`a request before the log's day: ${one.status}`);
      const day = await fillLogDay(postgres!.url, logDayRows);
      rows.push({ scenario: 'the request log before the batches', path: '', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '',
        note: `${day.rows.toLocaleString('en')} rows in today's partition (${day.partitionMb.toFixed(0)} MB with its indexes), made in ${(day.ms / 1000).toFixed(1)} s` });
    }
    /** Each size's cost a line, against the first size's (issue 42: a batch's cost must not grow with its size). */
    const perLine: { lines: number; cpuMs: number; pathCpuMs: number; ms: number }[] = [];
    for (const lines of batchSizes) {
      await limited.control({ cmd: 'reset' });
      await limited.control({ cmd: 'limit', limit: burstLimit, retryAfter: 1 });
      await limited.control({ cmd: 'behaviour', behaviour: { delayMs: burstUpstreamMs } });
      progress(`batch: ${lines} lines through the Batch API, with interactive load beside it…`);
      const batchProcesses: [string, () => number][] = [
        ...[...serviceProcesses, ['batch-worker', batchWorker!.child.pid!] as [string, number], ['upstream', limited.child.pid!] as [string, number], ['interactive upstream', mock.child.pid!] as [string, number]]
          .map(([name, pid]) => [name, () => cpuMs(pid)] as [string, () => number]),
        ['PostgreSQL', () => postgresCpuMs(postgres!.pid)],
      ];
      const cpuBefore = batchProcesses.map(([, spent]) => spent());
      const ticksBefore = machineTicks();
      const startedAt = performance.now();
      const interactive = interactiveBeside();
      const run = await runBatch({ gatewayUrl: gateway.url, key: batchKey, model: 'burst-model', lines, memoryOf });
      interactive.stop();
      const interactiveResult = await interactive.done;
      // CPU each process spent over the run (PostgreSQL: its server and backends).
      const wallS = (performance.now() - startedAt) / 1000;
      const batchCpu = [...batchProcesses.map(([name, spent], i) => [name, (spent() - cpuBefore[i]!) / 1000] as const), ['load generator', interactiveResult.cpuMs / 1000] as const];
      const batchCpuTotal = batchCpu.reduce((sum, [, c]) => sum + c, 0);
      const batchStolen = stolenSince(ticksBefore);
      // What bounds the batch on this machine: the CPU one line costs on its path, against the
      // cores the physical rate (every slot busy) would take at that cost.
      const onBatchPath = new Set(['completion-worker', 'Redis', 'batch-worker', 'upstream', 'PostgreSQL']);
      const pathMsPerLine = (1000 * batchCpu.filter(([name]) => onBatchPath.has(name)).reduce((sum, [, c]) => sum + c, 0)) / lines;
      const physicalRate = (burstLimit * 1000) / burstUpstreamMs;
      const upstream = await limited.control({ cmd: 'stats' });
      await limited.control({ cmd: 'reset' });
      const physicalS = (lines / burstLimit) * burstUpstreamMs / 1000;
      const scenario = `batch ${lines.toLocaleString('en')} lines, limit ${burstLimit}`;
      const slots = upstream.meanInFlight / burstLimit;
      // Little's law: in flight ÷ the lines' rate while they ran is how long the upstream held each.
      const heldMs = (upstream.meanInFlight * run.runningMs) / lines;
      const memory = Object.entries(run.memory).map(([name, m]) => `${name} ${m.before.toFixed(0)}→${m.peak.toFixed(0)}→${m.after.toFixed(0)}`).join(', ');
      rows.push(
        {
          scenario, path: 'through the Batch API', 'req/s': Math.round(lines / (run.finishedMs / 1000)), 'p50 ms': '', 'p99 ms': '', errors: lines - run.completed,
          note: `slots ${(100 * slots).toFixed(1)}% busy (${upstream.meanInFlight.toFixed(1)} of ${burstLimit} in flight on average), ${upstream.overLimit} over-limit; ` +
            `the upstream held a call ${heldMs.toFixed(1)} ms on average (its ${burstUpstreamMs} ms, and its own wait for a core), so each slot idled ${((burstLimit * run.runningMs) / lines - heldMs).toFixed(1)} ms between calls; ` +
            `created → completed ${(run.finishedMs / 1000).toFixed(2)} s (${(100 * run.finishedMs / 1000 / physicalS).toFixed(0)}% of the physical ${physicalS.toFixed(2)} s; ` +
            `upload ${(run.uploadMs / 1000).toFixed(2)} s before it, validation ${(run.validatedMs / 1000).toFixed(2)} s, first line to last ${(run.runningMs / 1000).toFixed(2)} s = ${(100 * run.runningMs / 1000 / physicalS).toFixed(0)}%)`,
        },
        { scenario: `interactive c=${process.env.BENCH_INTERACTIVE ?? 4} during the batch of ${lines.toLocaleString('en')}`, path: 'through the gateway', 'req/s': interactiveResult.rps, 'p50 ms': interactiveResult.p50, 'p99 ms': interactiveResult.p99, errors: interactiveResult.non2xx + interactiveResult.errors, note: 'target p99 under 100 ms' },
        { scenario: `CPU, batch of ${lines.toLocaleString('en')}`, path: 'CPU s', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `${batchCpuTotal.toFixed(1)} s CPU over ${wallS.toFixed(1)} s on ${os.availableParallelism()} cores (${(100 * batchCpuTotal / (os.availableParallelism() * wallS)).toFixed(0)}% busy, 3 s idle after it included; ${batchStolen}): ${batchCpu.filter(([, c]) => c >= 0.05).map(([name, c]) => `${name} ${c.toFixed(1)}`).join(', ')}; ` +
          `${pathMsPerLine.toFixed(2)} ms CPU a line on its path (completion and batch workers, Redis, PostgreSQL, upstream; the interactive load's share in the worker and Redis included unless BENCH_INTERACTIVE=0), so every slot busy (${physicalRate.toLocaleString('en')} lines/s) would take ${(pathMsPerLine * physicalRate / 1000).toFixed(1)} cores` },
        { scenario: `memory, batch of ${lines.toLocaleString('en')}`, path: 'MB before → peak → after', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: memory },
        await batchLineTimes(run, lines),
      );
      perLine.push({ lines, cpuMs: (1000 * batchCpuTotal) / lines, pathCpuMs: pathMsPerLine, ms: run.finishedMs / lines });
      (figures.batch ??= {} as Record<string, unknown>) as Record<string, unknown>;
      (figures.batch as Record<string, unknown>)[String(lines)] = { ...run, upstream, physicalS, slots, interactive: interactiveResult };
    }
    const [first, ...larger] = perLine;
    for (const size of first ? larger : []) {
      const against = (value: number, of: number) => `${value.toFixed(3)} (${(100 * value / of).toFixed(0)}%)`;
      rows.push({
        scenario: `a line of the batch of ${size.lines.toLocaleString('en')}, against one of ${first!.lines.toLocaleString('en')}`, path: 'ms a line', 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '',
        note: `CPU, every process (PostgreSQL and the interactive load beside it included) ${against(size.cpuMs, first!.cpuMs)}; on the line's path ${against(size.pathCpuMs, first!.pathCpuMs)}; ` +
          `created → completed ${against(size.ms, first!.ms)}; the ${first!.lines.toLocaleString('en')}: ${first!.cpuMs.toFixed(3)}, ${first!.pathCpuMs.toFixed(3)}, ${first!.ms.toFixed(3)}; issue 42's target: within 110%`,
      });
    }
    if (perLine.length > 0) (figures.batch as Record<string, unknown>).perLine = perLine;
  }

  if (parts.has('speech')) {
    // OpenAI speech into mp3 from a Gemini speech model (300 ms to answer 2 s of audio), encoded
    // by the audio workers, at 1 then 2 processes of AUDIO_CONCURRENCY 8.
    const gemini = await startMockGeminiProcess({ delayMs: 300 });
    try {
      await admin('POST', '/api/channel/', { name: 'speech', type: 'gemini', key: gemini.apiKey, base_url: gemini.url, models: ['speech-model'], timeout_ms: 30_000 });
      const speechKey = (await admin('POST', '/api/token/', { name: 'speech', unlimited_quota: true })).key as string;
      progress('speech: OpenAI text-to-speech into mp3 at 1, then 2 audio-worker processes…');
      const runs = await runSpeech({ gatewayUrl: gateway.url, key: speechKey, model: 'speech-model', requests: 96, concurrency: 32, env: { ...env, AUDIO_CONCURRENCY: '8' } });
      for (const run of runs) {
        rows.push({
          scenario: `speech into mp3, ${run.processes} audio-worker process${run.processes > 1 ? 'es' : ''} (concurrency 8 each)`, path: 'through the gateway', 'req/s': run.rps, 'p50 ms': run.p50, 'p99 ms': run.p99, errors: run.failed,
          note: `96 requests, 32 at a time, each 2 s of audio from a 300 ms upstream; ${run.audioSeconds.toFixed(0)} s of mp3; audio workers and their FFmpeg encodes ${(1000 * run.cpuSeconds / 96).toFixed(1)} ms CPU a request`,
        });
      }
      figures.speech = runs;
    } finally {
      gemini.stop();
    }
  }

  if (parts.has('tenants')) {
    // Two tenants (users of their own) on the burst's channel (32 slots, 20 ms): one bursts
    // 5,000 interactive requests at once, the other sends one request at a time throughout. The
    // steady one's latency beside the burst, against its own baseline on the same channel alone.
    const tenant = async (name: string) => {
      const user = await admin('POST', '/api/user/', { username: name, password: 'bench-tenant-password' });
      return { userId: user.id as number, key: (await admin('POST', '/api/token/', { name, user_id: user.id, unlimited_quota: true })).key as string };
    };
    const [{ key: hogKey }, { key: steadyKey, userId: steadyUser }] = [await tenant('bench-hog'), await tenant('bench-steady')];
    await limited.control({ cmd: 'limit', limit: burstLimit, retryAfter: 1 });
    await limited.control({ cmd: 'behaviour', behaviour: { delayMs: burstUpstreamMs } });
    // The steady tenant's latencies are pooled over `tenantRounds` bursts: one burst gives it
    // about 150 requests, whose p99 is their second slowest, and that moved by 50 to 200 ms from
    // run to run of the same code.
    const steadyLoad = (extra: Record<string, unknown>) => load({ ...through('burst-model', {}, steadyKey), sequential: 0, samples: true, ...extra });
    progress('two tenants: the steady one alone…');
    const baseline = await steadyLoad({ forMs: 10_000 }).done;
    const besideFrom = new Date();
    const ticksBefore = machineTicks();
    const ms = (micros: number[], p: number) => Math.round(percentile(micros, p) / 1000);
    const besideMicros: number[] = [];
    const hogs: LoadResult[] = [];
    const roundP99s: number[] = [];
    let steadyFailures = 0;
    /** When each burst began, in ms after `besideFrom`. */
    const burstStarts: number[] = [];
    for (let round = 1; round <= tenantRounds; round++) {
      progress(`two tenants: one bursting ${burstSize} at once, the other steady beside it (burst ${round} of ${tenantRounds})…`);
      const steady = steadyLoad({});
      burstStarts.push(Date.now() - besideFrom.getTime());
      hogs.push(await load({ ...through('burst-model', {}, hogKey), connections: burstSize, once: true, timeout: 120 }).done);
      steady.stop();
      const run = await steady.done;
      besideMicros.push(...run.samples!);
      steadyFailures += run.non2xx;
      roundP99s.push(ms(run.samples!, 99));
      await sleep(2000); // the burst's last replies and rows out of the way
    }
    const tenantsStolen = stolenSince(ticksBefore);
    const upstream = await limited.control({ cmd: 'stats' });
    await limited.control({ cmd: 'reset' });
    const physicalS = (burstSize / burstLimit) * burstUpstreamMs / 1000;
    const beside = { requests: besideMicros.length, p50: ms(besideMicros, 50), p99: ms(besideMicros, 99), max: ms(besideMicros, 100) };
    const baselineMs = { p50: ms(baseline.samples!, 50), p99: ms(baseline.samples!, 99) };
    const hog = hogs.reduce((a, b) => (b.durationMs > a.durationMs ? b : a));
    const scenario = `two tenants: ${burstSize} at once beside a steady one, limit ${burstLimit}`;
    rows.push(
      { scenario, path: 'steady tenant alone (baseline)', 'req/s': Math.round(baseline.rps), 'p50 ms': baselineMs.p50, 'p99 ms': baselineMs.p99, errors: baseline.non2xx + baseline.errors, note: `one request at a time on the burst channel, 10 s (${baseline.requests} requests)` },
      { scenario, path: `steady tenant beside the burst (${tenantRounds} bursts pooled)`, 'req/s': '', 'p50 ms': beside.p50, 'p99 ms': beside.p99, errors: steadyFailures, note: `p99 ${overhead(baselineMs.p99, beside.p99)} ms over its baseline (target: within 100 ms), over ${beside.requests} requests; p99 of each burst alone ${roundP99s.map((p) => overhead(baselineMs.p99, p)).join(', ')} ms; max ${beside.max} ms; ${tenantsStolen}` },
      { scenario, path: 'bursting tenant (the slowest of its bursts)', 'req/s': Math.round(burstSize / (hog.durationMs / 1000)), 'p50 ms': hog.p50, 'p99 ms': hog.p99, errors: hogs.reduce((n, h) => n + burstSize - h.ok, 0), note: `${hogs.map((h) => `${(100 * h.ok / burstSize).toFixed(1)}%`).join(', ')} ok (${hogs.map((h) => JSON.stringify(h.statusCodes)).join(', ')}), ${upstream.overLimit} over-limit, last reply ${hogs.map((h) => `${(h.durationMs / 1000).toFixed(2)} s`).join(', ')} (slowest ${(100 * (hog.durationMs / 1000) / physicalS).toFixed(0)}% of the physical ${physicalS.toFixed(2)} s)` },
    );
    figures.tenants = { baseline: { ...baseline, samples: undefined, ...baselineMs }, beside: { ...beside, roundP99s }, hogs: hogs.map((h) => ({ ...h, samples: undefined })), upstream, physicalS };
    if (postgres) {
      // Where the steady tenant's time went, from the workers' request log (rows of requests a
      // worker ran): from its arrival at the gateway (the job's timestamp, taken before admission
      // and the add) to a worker taking it, waiting there for a channel slot, its upstream call,
      // and arrival to end. The rest of what its client saw is the gateway's reading of the
      // request before it arrived, and its relaying of the answer.
      const { logged, queued, total, slot, upstreamMs } = await loggedStages('user_id = $1 AND created_at >= $2', [steadyUser, besideFrom]);
      /** A row's time after the start of the burst it came in. */
      const intoItsBurst = (arrivedMs: number) => {
        const at = arrivedMs - besideFrom.getTime();
        return at - Math.max(0, ...burstStarts.filter((start) => start <= at));
      };
      const slowest = (all: typeof logged) => [...all].sort((a, b) => b.total_ms - a.total_ms).slice(0, 5)
        .map((r) => `${(intoItsBurst(r.arrived_ms) / 1000).toFixed(1)}: ${r.queue_ms}/${r.slot_ms ?? '-'}/${r.upstream_ms ?? '-'}/${r.total_ms}`).join(', ');
      rows.push({ scenario, path: 'steady tenant: arrival to end, from the request log', 'req/s': '', 'p50 ms': percentile(total, 50), 'p99 ms': percentile(total, 99), errors: '',
        note: `${logged.length} rows: arrival → taken by a worker p50 ${percentile(queued, 50)}, p99 ${percentile(queued, 99)}, max ${percentile(queued, 100)}; waiting for a slot p50 ${percentile(slot, 50)}, p99 ${percentile(slot, 99)}; upstream p50 ${percentile(upstreamMs, 50)}, p99 ${percentile(upstreamMs, 99)}; arrival → end max ${percentile(total, 100)} ms; slowest (at s into the burst: queue/slot/upstream/total ms) ${slowest(logged)}` });
    }
  }

  if (parts.has('money')) {
    // What cost accounting costs a request: the same requests at c=16 through the same gateway
    // and worker, in rounds, by a model with no price (its lookup finds none), a priced model
    // (its cost computed from the usage and added to the key's and user's spend with the next
    // flush), and a priced model on a key with a budget in money (its worst case's cost held
    // and settled in the scripts that hold quota: every request then holds).
    await admin('PUT', '/api/price/', { model: 'bench-priced', input: 2.5, output: 10 });
    const budgetKey = (await admin('POST', '/api/token/', { name: 'budget', unlimited_quota: true, max_budget: 1_000_000, budget_duration: 'monthly' })).key as string;
    const settings: [string, ReturnType<typeof through>][] = [
      ['model with no price', through('bench-model')],
      ['priced model', through('bench-priced')],
      ['priced model, key with a budget', through('bench-priced', {}, budgetKey)],
    ];
    const rounds = Number(process.env.BENCH_DOOR_ROUNDS ?? 3);
    const perRound = Math.ceil(costRequests / rounds);
    const sums = settings.map(() => ({ cpu: new Map<string, number>(), commands: 0, redisUs: 0, requests: 0, errors: 0 }));
    for (const [, at] of settings) await load({ ...at, connections: 16, amount: 500 }).done; // warm-up
    for (let round = 1; round <= rounds; round++) {
      for (const [i, [path, at]] of settings.entries()) {
        progress(`cost accounting, round ${round}/${rounds}: ${path}, ${perRound} requests at concurrency 16…`);
        await resetRedisStats();
        const before = serviceProcesses.map(([, pid]) => cpuMs(pid));
        const result = await load({ ...at, connections: 16, amount: perRound }).done;
        const sum = sums[i]!;
        serviceProcesses.forEach(([name, pid], j) => sum.cpu.set(name, (sum.cpu.get(name) ?? 0) + cpuMs(pid) - before[j]!));
        const commands = commandTotals(await redisInfo('commandstats'), 1);
        sum.commands += commands.calls;
        sum.redisUs += commands.usec;
        sum.requests += perRound;
        sum.errors += result.non2xx + result.errors;
      }
    }
    const totalOf = (sum: (typeof sums)[number]) => [...sum.cpu.values()].reduce((a, b) => a + b, 0) / sum.requests;
    for (const [i, [path]] of settings.entries()) {
      const sum = sums[i]!;
      const cpu = [...sum.cpu].filter(([, ms]) => ms / sum.requests >= 0.005).map(([name, ms]) => `${name} ${(ms / sum.requests).toFixed(3)}`).join(', ');
      rows.push({
        scenario: `cost accounting (${sum.requests} at c=16, ${rounds} rounds)`, path, 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: sum.errors,
        note: `${(sum.commands / sum.requests).toFixed(1)} Redis commands, ${(sum.redisUs / sum.requests).toFixed(0)} µs of Redis; CPU ms/request: ${cpu} (${totalOf(sum).toFixed(3)} together, ${(100 * totalOf(sum) / totalOf(sums[0]!)).toFixed(0)}% of the unpriced model's)`,
      });
    }
    figures.money = settings.map(([path], i) => ({ path, cpuMsPerRequest: totalOf(sums[i]!), commands: sums[i]!.commands / sums[i]!.requests }));
  }

  if (parts.has('log') && postgres) {
    // The request log's cost on the hot path: the same requests at c=64 with it on (the default)
    // and off (the gateway and the completion worker restarted with REQUEST_LOG=off).
    const db = new pg.Client({ connectionString: postgres.url });
    await db.connect();
    const rowCount = async () => Number((await db.query('SELECT count(*) AS n FROM request_log')).rows[0].n);
    const logRequests = 20_000;
    const measure = async (gatewayNow: ServiceProcess, workerNow: ServiceProcess) => {
      await load({ ...through('bench-model'), url: `${gatewayNow.url}/v1/completions`, connections: 64, amount: 2000 }).done; // warm-up
      await new Promise((r) => setTimeout(r, 1000));
      // PostgreSQL is a process per connection: its CPU is the postmaster's and its backends'.
      const processes: [string, () => number][] = [
        ['gateway', () => cpuMs(gatewayNow.child.pid!)], ['completion-worker', () => cpuMs(workerNow.child.pid!)],
        ...redisPids.map(([name, pid]) => [name, () => cpuMs(pid)] as [string, () => number]), ['PostgreSQL', () => postgresCpuMs(postgres.pid)],
      ];
      await resetRedisStats();
      const rowsBefore = await rowCount();
      const cpuBefore = processes.map(([, cpu]) => cpu());
      const result = await load({ ...through('bench-model'), url: `${gatewayNow.url}/v1/completions`, connections: 64, amount: logRequests }).done;
      const seconds = result.durationMs / 1000;
      await new Promise((r) => setTimeout(r, 1500)); // the last rows' flush
      const cpu = processes.map(([name, spent], i) => [name, (spent() - cpuBefore[i]!) / logRequests] as const);
      const rowsWritten = (await rowCount()) - rowsBefore;
      const commands = commandTotals(await redisInfo('commandstats'), logRequests);
      return { result, cpu, commands: commands.calls, rowsWritten, rowsPerSecond: rowsWritten / seconds };
    };
    progress(`request log on: ${logRequests} requests at c=64…`);
    const on = await measure(gateway, services[1]!);
    progress('request log off: restarting the gateway and the completion worker with REQUEST_LOG=off…');
    const offEnv = { ...env, REQUEST_LOG: 'off' };
    await Promise.all([gateway.stop(), services[1]!.stop()]);
    const workerOff = await startService('completion-worker', offEnv, 20_000, quiet);
    const gatewayOff = await startService('gateway', offEnv, 20_000, quiet);
    services.push(workerOff, gatewayOff);
    progress(`request log off: ${logRequests} requests at c=64…`);
    const off = await measure(gatewayOff, workerOff);
    await db.end();
    const scenario = `request log, ${logRequests.toLocaleString('en')} at c=64`;
    const cpuNote = (m: typeof on) => m.cpu.filter(([, ms]) => ms >= 0.001).map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ');
    for (const [path, m] of [['log on (default)', on], ['log off', off]] as const) {
      rows.push({
        scenario, path, 'req/s': m.result.rps, 'p50 ms': m.result.p50, 'p99 ms': m.result.p99, errors: m.result.non2xx + m.result.errors,
        note: `${m.commands.toFixed(1)} Redis commands/request; CPU ms/request: ${cpuNote(m)}; rows written ${m.rowsWritten} (${m.rowsPerSecond.toFixed(0)}/s)`,
      });
    }
    figures.requestLog = { on, off };
  }

  if (parts.has('stages')) {
    // Where a request's time goes at c=1, stage by stage: a gateway and a completion worker
    // started afresh with every trace sampled, 1,000 requests one at a time, the stages read from
    // their traces (bench/stages.ts). Tracing adds its own few microseconds to each span's edge.
    const receiver = await startOtlpReceiver();
    try {
      await Promise.all(services.filter((s) => s.name === 'gateway' || s.name === 'completion-worker').map((s) => s.stop()));
      progress('stages: restarting the gateway and the completion worker with every trace sampled…');
      const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' };
      const workerNow = await startService('completion-worker', { ...env, ...tracing }, 20_000, quiet);
      const gatewayNow = await startService('gateway', { ...env, ...tracing }, 20_000, quiet);
      services.push(workerNow, gatewayNow);
      const at = { ...through('bench-model'), url: `${gatewayNow.url}/v1/completions` };
      await load({ ...at, sequential: 500 }).done; // warm-up
      await new Promise((r) => setTimeout(r, 6000));
      const from = receiver.spans.length;
      progress('stages: 1,000 requests one at a time…');
      const result = await load({ ...at, sequential: 1000, samples: true }).done;
      await new Promise((r) => setTimeout(r, 6000)); // the SDK's batch exports (every 5 s)
      const clientMeanUs = result.samples!.reduce((a, b) => a + b, 0) / result.samples!.length;
      const table = stageTable(receiver.spans.slice(from), clientMeanUs);
      for (const row of table) {
        rows.push({ scenario: 'stages of a request at c=1 (traced)', path: row.where, 'req/s': '', 'p50 ms': '', 'p99 ms': '', errors: '', note: `${row.stage}: mean ${row.meanUs.toFixed(0)} µs` });
      }
      figures.stages = { clientMeanUs, clientP50us: result.p50us, table };
    } finally {
      await receiver.close();
    }
  }

  if (parts.has('traces')) {
    // What tracing costs a request: the same requests at c=16 through a gateway and a completion
    // worker started afresh for each setting, one after another: tracing off (no OTEL_*), every
    // trace sampled, and 1% sampled, exporting OTLP over HTTP (protobuf, the default) to a
    // receiver in this process, whose CPU is the collector's and is not counted.
    const receiver = await startOtlpReceiver();
    const settings: [string, Record<string, string>][] = [
      ['tracing off', {}],
      ['traces sampled 100%', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_always_on' }],
      ['traces sampled 1%', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' }],
      // Off again, last: what the machine drifted by meanwhile shows between the two.
      ['tracing off, again', {}],
    ];
    const measured: { path: string; result: LoadResult; cpu: (readonly [string, number])[]; spans: number }[] = [];
    try {
      for (const [path, tracing] of settings) {
        // Whatever gateway and completion worker run now (the log part may have restarted them) leave first.
        await Promise.all(services.filter((s) => s.name === 'gateway' || s.name === 'completion-worker').map((s) => s.stop()));
        progress(`tracing: ${path}, restarting the gateway and the completion worker…`);
        const workerNow = await startService('completion-worker', { ...env, ...tracing }, 20_000, quiet);
        const gatewayNow = await startService('gateway', { ...env, ...tracing }, 20_000, quiet);
        services.push(workerNow, gatewayNow);
        const at = { ...through('bench-model'), url: `${gatewayNow.url}/v1/completions` };
        await load({ ...at, connections: 16, amount: 2000 }).done; // warm-up
        await new Promise((r) => setTimeout(r, 1000));
        const spansBefore = receiver.spans.length;
        const processes: [string, number][] = [['gateway', gatewayNow.child.pid!], ['completion-worker', workerNow.child.pid!], ...redisPids];
        const cpuBefore = processes.map(([, pid]) => cpuMs(pid));
        progress(`tracing: ${path}, ${costRequests} requests at concurrency 16…`);
        const result = await load({ ...at, connections: 16, amount: costRequests }).done;
        await new Promise((r) => setTimeout(r, 6000)); // the SDK's batch exports (every 5 s) are counted
        measured.push({ path, result, cpu: processes.map(([name, pid], i) => [name, (cpuMs(pid) - cpuBefore[i]!) / costRequests] as const), spans: (receiver.spans.length - spansBefore) / costRequests });
      }
    } finally {
      await receiver.close();
    }
    const totalOf = (m: (typeof measured)[number]) => m.cpu.reduce((sum, [, ms]) => sum + ms, 0);
    const offRuns = [measured[0]!, measured.at(-1)!];
    const offMean = (totalOf(offRuns[0]!) + totalOf(offRuns[1]!)) / 2;
    for (const m of measured) {
      rows.push({
        scenario: `tracing's cost (${costRequests} at c=16)`, path: m.path, 'req/s': m.result.rps, 'p50 ms': m.result.p50, 'p99 ms': m.result.p99, errors: m.result.non2xx + m.result.errors,
        note: `CPU ms/request: ${m.cpu.map(([name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ')} (${totalOf(m).toFixed(3)} together, ${(100 * totalOf(m) / offMean).toFixed(0)}% of the two off runs' mean); ${m.spans.toFixed(1)} spans exported a request`,
      });
    }
    figures.traces = measured;
  }

  const round = (value: unknown, digits: number) => (typeof value === 'number' ? Number(value.toFixed(digits)) : value);
  console.table(rows.map((r) => ({ ...r, 'req/s': round(r['req/s'], 0), 'p50 ms': round(r['p50 ms'], 3), 'p99 ms': round(r['p99 ms'], 3) })));
  const dir = join(repoRoot, 'bench/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(figures, null, 2));
  console.log(`figures written to ${file}`);
} finally {
  // A profiled process writes its profile as it exits: it gets the time for it.
  await Promise.all(services.map((s) => s.stop(process.env.BENCH_PROFILE ? 'SIGTERM' : 'SIGKILL')));
  mock.child.kill();
  portkey.child.kill();
  limited.child.kill();
  for (const n of redisNodes) n.client.disconnect();
  await redisServer?.close();
  await postgres?.close();
  await cluster?.close();
}
