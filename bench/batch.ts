/**
 * The bench's Batch API run: one JSONL file uploaded, one batch created and watched to its end,
 * with each process's memory sampled before, throughout and after.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface BatchRunOptions {
  gatewayUrl: string;
  key: string;
  model: string;
  lines: number;
  /** Each process's memory in MB now, by name. */
  memoryOf: Record<string, () => number | Promise<number>>;
}

export interface BatchRun {
  batchId: string;
  uploadMs: number;
  /** Created → seen in_progress: the lines validated. */
  validatedMs: number;
  /** Seen in_progress → seen finalizing or completed: the lines run. */
  runningMs: number;
  /** Created → seen completed: what its user waits. */
  finishedMs: number;
  completed: number;
  failed: number;
  memory: Record<string, { before: number; peak: number; after: number }>;
}

/**
 * PostgreSQL's memory: the proportional set size (shared buffers split between the processes
 * that touch them, not counted once in each) of the server and its backends.
 */
export function postgresMemoryMb(serverPid: number): number {
  let kb = 0;
  for (const pid of serverAndBackends(serverPid)) {
    try {
      kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      /* gone meanwhile */
    }
  }
  return kb / 1024;
}

/** The server and its child processes (backends, background workers). */
function serverAndBackends(serverPid: number): number[] {
  const pids = [serverPid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === serverPid) pids.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/** CPU ms PostgreSQL's server and backends have spent (a backend that exited is not counted). */
export function postgresCpuMs(serverPid: number): number {
  let ticks = 0;
  for (const pid of serverAndBackends(serverPid)) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      /* gone meanwhile */
    }
  }
  return ticks * 10;
}

async function call(url: string, key: string, init: RequestInit = {}): Promise<any> {
  const response = await fetch(url, { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) } });
  const body = await response.json();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

export async function runBatch(options: BatchRunOptions): Promise<BatchRun> {
  const { gatewayUrl, key, model, lines } = options;
  const names = Object.keys(options.memoryOf);
  const sample = async () => Object.fromEntries(await Promise.all(names.map(async (n) => [n, await options.memoryOf[n]!()] as const)));
  const before = await sample();
  const peak = { ...before };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const now = await sample();
      for (const n of names) peak[n] = Math.max(peak[n]!, now[n]!);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();

  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/completions', body: { model, prompt: 'Say this is a test', max_tokens: 16 } }),
  ).join('\n');
  const uploadStarted = performance.now();
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text]), 'bench.jsonl');
  const file = await call(`${gatewayUrl}/v1/files`, key, { method: 'POST', body: form });
  const uploadMs = performance.now() - uploadStarted;

  const created = performance.now();
  const batch = await call(`${gatewayUrl}/v1/batches`, key, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/completions', completion_window: '24h' }),
  });
  let inProgressAt = 0;
  let runEndAt = 0;
  let state = batch;
  const deadline = Date.now() + 600_000;
  while (!['completed', 'failed', 'cancelled', 'expired'].includes(state.status)) {
    if (Date.now() > deadline) throw new Error(`batch of ${lines} not done in 10 minutes: ${JSON.stringify(state.request_counts)}`);
    await new Promise((r) => setTimeout(r, 50));
    state = await call(`${gatewayUrl}/v1/batches/${batch.id}`, key);
    if (state.status !== 'validating' && !inProgressAt) inProgressAt = performance.now();
    if (['finalizing', 'completed'].includes(state.status) && !runEndAt) runEndAt = performance.now();
  }
  const finished = performance.now();
  if (state.status !== 'completed') throw new Error(`batch of ${lines} ended ${state.status}: ${JSON.stringify(state.errors ?? state.request_counts)}`);
  await new Promise((r) => setTimeout(r, 3000)); // what it held is given back
  sampling = false;
  await sampler;
  const after = await sample();
  return {
    batchId: batch.id as string,
    uploadMs,
    validatedMs: inProgressAt - created,
    runningMs: runEndAt - inProgressAt,
    finishedMs: finished - created,
    completed: state.request_counts.completed,
    failed: state.request_counts.failed,
    memory: Object.fromEntries(names.map((n) => [n, { before: before[n]!, peak: peak[n]!, after: after[n]! }])),
  };
}
