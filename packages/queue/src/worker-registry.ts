/**
 * The worker processes serving each queue, as the operations console and the metrics show them:
 * every worker process writes its entry (`<host>/<pid>` → its concurrency and lanes) into one
 * hash per queue every few seconds, and removes it when it stops. An entry not refreshed for
 * WORKER_STALE_MS is a process that died without saying so: left out, and swept.
 *
 * (BullMQ's own `getWorkers` reads CLIENT LIST, which on a Redis Cluster misses the workers: its
 * blocking connections lose their client name when duplicated from a Cluster client.)
 */
import { hostname } from 'node:os';
import type { Redis } from './redis-connection.ts';

export const WORKER_HEARTBEAT_MS = 5_000;
export const WORKER_STALE_MS = 3 * WORKER_HEARTBEAT_MS;

export const workerRegistryKey = (queue: string) => `gw:workers:${queue}`;

/** A worker process serving a queue: its lanes on every shard, and the jobs it runs at once. */
export interface WorkerProcess {
  /** `<host>/<pid>`. */
  process: string;
  lanes: number;
  concurrency: number;
  /** Epoch ms of its last heartbeat. */
  seen: number;
}

/** This process's entry in a queue's registry, kept fresh until `stop`. */
export function registerWorker(redis: Redis, queue: string, entry: { lanes: number; concurrency: number }): { stop(): Promise<void> } {
  const process_ = `${hostname()}/${process.pid}`;
  const key = workerRegistryKey(queue);
  const beat = () => redis.hset(key, process_, JSON.stringify({ ...entry, seen: Date.now() })).catch(() => 0);
  void beat();
  const timer = setInterval(beat, WORKER_HEARTBEAT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await redis.hdel(key, process_).catch(() => 0);
    },
  };
}

/** The processes serving `queue` now, by name; entries gone stale are swept. */
export async function workersOf(redis: Redis, queue: string, now = Date.now()): Promise<WorkerProcess[]> {
  const key = workerRegistryKey(queue);
  const entries = await redis.hgetall(key);
  const live: WorkerProcess[] = [];
  const stale: string[] = [];
  for (const [name, value] of Object.entries(entries)) {
    let parsed: Omit<WorkerProcess, 'process'> | undefined;
    try {
      parsed = JSON.parse(value) as Omit<WorkerProcess, 'process'>;
    } catch {
      parsed = undefined;
    }
    if (parsed && now - parsed.seen <= WORKER_STALE_MS) live.push({ process: name, lanes: parsed.lanes, concurrency: parsed.concurrency, seen: parsed.seen });
    else stale.push(name);
  }
  if (stale.length > 0) await redis.hdel(key, ...stale).catch(() => 0);
  return live.sort((a, b) => a.process.localeCompare(b.process));
}
