/**
 * The floor the queue hop is measured against: BullMQ's own add → process → complete with
 * nothing else (no reply path, no routing, no store), in a process of its own, with the same
 * job options and one worker connection as the gateway's queues. `requests` jobs at
 * `concurrency` at a time, each timed from add to completion; the caller reads INFO commandstats
 * around the run. Options arrive as JSON in argv[2]; the figures go back over IPC.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';

interface FloorOptions { redisUrl: string; requests: number; concurrency: number }

const options = JSON.parse(process.argv[2]!) as FloorOptions;
const prefix = '{bench-floor}';
const queueConnection = new Redis(options.redisUrl, { enableAutoPipelining: true, maxRetriesPerRequest: null });
const workerConnection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
const queue = new Queue('floor', { connection: queueConnection, prefix, defaultJobOptions: { removeOnComplete: true, removeOnFail: true } });
const waiting = new Map<string, () => void>();
const worker = new Worker('floor', async (job) => ({ echo: job.data.n }), { connection: workerConnection, prefix, concurrency: options.concurrency });
worker.on('completed', (job) => {
  waiting.get(job.id!)?.();
  waiting.delete(job.id!);
});
await worker.waitUntilReady();
process.send!({ type: 'ready' });
await new Promise<void>((resolve) => process.once('message', () => resolve()));

const started = performance.now();
const latenciesUs: number[] = [];
let next = 0;
async function client(): Promise<void> {
  while (next < options.requests) {
    const n = next++;
    const id = `floor-${n}`;
    const at = performance.now();
    const done = new Promise<void>((resolve) => waiting.set(id, resolve));
    await queue.add('floor', { n }, { jobId: id });
    await done;
    latenciesUs.push((performance.now() - at) * 1000);
  }
}
await Promise.all(Array.from({ length: options.concurrency }, client));
const durationMs = performance.now() - started;
// The figures first: the caller reads INFO commandstats before the clean-up below adds to it.
latenciesUs.sort((a, b) => a - b);
const percentileUs = (q: number) => latenciesUs[Math.min(latenciesUs.length - 1, Math.floor(q * latenciesUs.length))]!;
process.send!({
  type: 'result',
  result: { requests: options.requests, durationMs, rps: Math.round(options.requests / (durationMs / 1000)), p50us: percentileUs(0.5), p90us: percentileUs(0.9), p99us: percentileUs(0.99) },
});
await new Promise<void>((resolve) => process.once('message', () => resolve()));
await worker.close();
await queue.obliterate({ force: true });
await queue.close();
queueConnection.disconnect();
workerConnection.disconnect();
process.disconnect();
