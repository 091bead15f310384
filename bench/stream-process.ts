/**
 * C streamed completions at once, in a process of its own: for each, the time to its first
 * chunk and every gap between chunks as they arrive (each `data:` event but `[DONE]`). Options
 * arrive as JSON in argv[2]; the figures go back over IPC.
 */
import { Agent, request } from 'undici';

interface StreamOptions { url: string; headers: Record<string, string>; body: string; concurrency: number }

const options = JSON.parse(process.argv[2]!) as StreamOptions;
const dispatcher = new Agent({ connections: options.concurrency });
const firstChunkMs: number[] = [];
const gapsMs: number[] = [];
let chunks = 0;
let failed = 0;

async function one(): Promise<void> {
  const started = performance.now();
  let last = started;
  let first = true;
  let buffered = '';
  const response = await request(options.url, { method: 'POST', headers: options.headers, body: options.body, dispatcher });
  if (response.statusCode !== 200) {
    failed++;
    await response.body.dump();
    return;
  }
  for await (const piece of response.body) {
    buffered += piece.toString();
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      // An event is `data: …`, or named first (`event: …` then `data: …`), as the Responses and Messages streams write it.
      if (!(event.startsWith('data:') || (event.startsWith('event:') && event.includes('\ndata:'))) || event.includes('[DONE]')) continue;
      const now = performance.now();
      if (first) firstChunkMs.push(now - started);
      else gapsMs.push(now - last);
      first = false;
      last = now;
      chunks++;
    }
  }
}

const started = performance.now();
await Promise.all(Array.from({ length: options.concurrency }, () => one().catch(() => { failed++; })));
const wallMs = performance.now() - started;
const at = (list: number[], q: number) => {
  const sorted = [...list].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : 0;
};
process.send!({
  type: 'result',
  result: {
    streams: options.concurrency, failed, chunks, wallMs, chunksPerSecond: chunks / (wallMs / 1000),
    firstChunkP50: at(firstChunkMs, 0.5), firstChunkP99: at(firstChunkMs, 0.99), gapP99: at(gapsMs, 0.99),
    cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
  },
});
await dispatcher.close();
process.disconnect();
