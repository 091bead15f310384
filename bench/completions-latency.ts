/**
 * Completions through the gateway vs straight to the upstream, with every part a process of its
 * own (Redis, mock OpenAI upstream, admin worker, completion worker, gateway) on this machine:
 *   - latency at concurrency 1 (sequential requests over one keep-alive connection): p50/p99;
 *   - throughput at concurrency 64 for a few seconds (autocannon): requests/s, p50, p99, errors.
 *   node bench/completions-latency.ts [sequentialRequests=2000] [seconds=10]
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { startStack } from '@gateway/testkit';
import { percentile } from './stats.ts';

const sequential = Number(process.argv[2] ?? 2000);
const seconds = Number(process.argv[3] ?? 10);

async function startUpstreamProcess() {
  const child = spawn(process.execPath, [new URL('./mock-openai-upstream-process.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`mock upstream exited with ${code}`)));
  });
  return { url: (JSON.parse(line) as { url: string }).url, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

/** CPU seconds a process has used so far (Linux /proc; 0 elsewhere). */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function redisPid(url: string): number | undefined {
  const port = new URL(url).port;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // redis-server renames its process to `redis-server <host>:<port>`.
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.startsWith('redis-server') && cmdline.includes(`:${port}`)) return Number(entry);
    } catch {
      /* gone */
    }
  }
  return undefined;
}

const upstream = await startUpstreamProcess();
const stack = await startStack({ workers: ['completion-worker'] });
try {
  const channel = await stack.admin('POST', '/api/channel/', { name: 'bench', type: 'openai', key: 'sk-bench-upstream-key', base_url: upstream.url, models: ['bench-model'] });
  if (channel.status !== 200) throw new Error(`channel: ${JSON.stringify(channel.body)}`);
  const token = await stack.admin('POST', '/api/token/', { name: 'bench', unlimited_quota: true });
  const apiKey: string = token.body.data.key;
  const body = JSON.stringify({ model: 'bench-model', prompt: 'Say this is a test', max_tokens: 16 });

  const targets = [
    { name: 'upstream directly', origin: upstream.url, headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-upstream-key' } },
    { name: 'through the gateway', origin: stack.gateway.url, headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` } },
  ];

  const latencyRows = [];
  for (const target of targets) {
    const pool = new Pool(target.origin, { connections: 1, pipelining: 1 });
    const call = async () => {
      const response = await pool.request({ method: 'POST', path: '/v1/completions', headers: target.headers, body });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`${target.name}: ${response.statusCode} ${text}`);
    };
    for (let i = 0; i < 200; i++) await call(); // warm-up: connections, JIT, caches
    const times: number[] = [];
    for (let i = 0; i < sequential; i++) {
      const started = performance.now();
      await call();
      times.push(performance.now() - started);
      if (i % 250 === 0) process.stderr.write(`\rconcurrency 1, ${target.name}: ${i}/${sequential}   `);
    }
    await pool.close();
    latencyRows.push({ target: target.name, requests: sequential, 'p50 ms': percentile(times, 50).toFixed(3), 'p99 ms': percentile(times, 99).toFixed(3), 'mean ms': (times.reduce((a, b) => a + b, 0) / times.length).toFixed(3) });
  }
  process.stderr.write('\n');

  const processes: [string, number | undefined][] = [
    ['gateway', stack.gateway.child.pid],
    ['completion-worker', stack.services.find((s) => s.name === 'completion-worker')?.child.pid],
    ['redis', redisPid(stack.redis.url)],
    ['mock upstream', upstream.pid],
    ['load generator', process.pid],
  ];
  const throughputRows = [];
  const cpuRows: Record<string, string>[] = [];
  for (const target of targets) {
    process.stderr.write(`concurrency 64 for ${seconds} s, ${target.name}…\n`);
    const cpuBefore = processes.map(([, pid]) => (pid ? cpuSeconds(pid) : 0));
    const result = await autocannon({
      url: `${target.origin}/v1/completions`,
      method: 'POST',
      headers: target.headers,
      body,
      connections: 64,
      duration: seconds,
    });
    const row: Record<string, string> = { target: target.name };
    processes.forEach(([name, pid], i) => {
      row[name] = pid ? `${Math.round(((cpuSeconds(pid) - cpuBefore[i]!) / seconds) * 100)}%` : '?';
    });
    cpuRows.push(row);
    throughputRows.push({
      target: target.name,
      'requests/s': Math.round(result.requests.average),
      'p50 ms': result.latency.p50,
      'p99 ms': result.latency.p99,
      'non-2xx': result.non2xx,
      errors: result.errors + result.timeouts,
    });
  }

  console.log('\nConcurrency 1 (sequential, one keep-alive connection):');
  console.table(latencyRows);
  const overhead = Number(latencyRows[1]!['p50 ms']) - Number(latencyRows[0]!['p50 ms']);
  console.log(`gateway overhead at p50: ${overhead.toFixed(3)} ms`);
  console.log(`\nConcurrency 64 (${seconds} s, autocannon):`);
  console.table(throughputRows);
  console.log('CPU use during the concurrency-64 runs (100% = one core; this machine has 2):');
  console.table(cpuRows);
} finally {
  await stack.stop();
  upstream.stop();
}
