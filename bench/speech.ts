/**
 * The bench's speech run: OpenAI text-to-speech requests into mp3, served by a Gemini speech
 * model (a mock of its own process, answering after `upstreamMs`) and encoded by the audio
 * worker, at 1 and then 2 audio-worker processes of AUDIO_CONCURRENCY each. The upstream's wait
 * and the encoding both hold a worker's slot, so processes, not one process, bound throughput:
 * this is why audio workers scale on their own.
 */
import { readFileSync } from 'node:fs';
import { startService, type ServiceProcess } from '@gateway/testkit';

export interface SpeechRunOptions {
  gatewayUrl: string;
  key: string;
  model: string;
  /** Requests sent, `concurrency` at a time. */
  requests: number;
  concurrency: number;
  env: Record<string, string>;
}

export interface SpeechRun {
  processes: number;
  rps: number;
  p50: number;
  p99: number;
  failed: number;
  /** Seconds of mp3 answered, in all. */
  audioSeconds: number;
  /** CPU seconds of the audio workers and their FFmpeg processes. */
  cpuSeconds: number;
}

/** CPU ms of a process and of the children it has waited for (its FFmpeg encodes). */
function cpuWithChildrenMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** mp3 at 64 kbit/s: 8,000 bytes a second. */
const MP3_BYTES_PER_SECOND = 8000;

async function drive(options: SpeechRunOptions): Promise<{ latencies: number[]; failed: number; bytes: number; wallMs: number }> {
  const body = JSON.stringify({ model: options.model, input: 'Two seconds of speech, in mp3 please.!!', voice: 'alloy', response_format: 'mp3' });
  const latencies: number[] = [];
  let failed = 0;
  let bytes = 0;
  let next = 0;
  const started = performance.now();
  const lane = async () => {
    while (next++ < options.requests) {
      const begun = performance.now();
      const response = await fetch(`${options.gatewayUrl}/v1/audio/speech`, { method: 'POST', headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json' }, body });
      const audio = await response.arrayBuffer();
      if (response.status !== 200) failed++;
      else bytes += audio.byteLength;
      latencies.push(performance.now() - begun);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  return { latencies: latencies.sort((a, b) => a - b), failed, bytes, wallMs: performance.now() - started };
}

/** The same load at 1 and at 2 audio-worker processes (started here, stopped after). */
export async function runSpeech(options: SpeechRunOptions): Promise<SpeechRun[]> {
  const workers: ServiceProcess[] = [];
  const runs: SpeechRun[] = [];
  try {
    for (const processes of [1, 2]) {
      while (workers.length < processes) workers.push(await startService('audio-worker', options.env, 20_000, { keepLogs: false }));
      await drive({ ...options, requests: options.concurrency }); // warm-up
      const before = workers.map((w) => cpuWithChildrenMs(w.child.pid!));
      const { latencies, failed, bytes, wallMs } = await drive(options);
      const cpuSeconds = workers.reduce((sum, w, i) => sum + cpuWithChildrenMs(w.child.pid!) - before[i]!, 0) / 1000;
      runs.push({ processes, rps: Math.round((options.requests / wallMs) * 1000 * 10) / 10, p50: Math.round(at(latencies, 0.5)), p99: Math.round(at(latencies, 0.99)), failed, audioSeconds: bytes / MP3_BYTES_PER_SECOND, cpuSeconds });
    }
  } finally {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  }
  return runs;
}
