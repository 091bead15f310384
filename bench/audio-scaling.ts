/**
 * Scaling the audio worker by processes: the same batch of speech requests, all sent at once,
 * against a mock Gemini upstream that takes 500 ms per request, with 1, 2 and 4 audio-worker
 * processes of AUDIO_CONCURRENCY each. The concurrency is kept modest so that the number of
 * processes, not one process's concurrency, bounds the throughput: ideal wall time is
 * ceil(batch / (processes × concurrency)) × 500 ms.
 *
 *   node bench/audio-scaling.ts
 *   AUDIO_BATCH=128 AUDIO_CONCURRENCY=8 UPSTREAM_DELAY_MS=500 AUDIO_PROCESSES=1,2,4 node bench/audio-scaling.ts
 */
import { startStack, type ServiceProcess } from '@gateway/testkit';
import { startMockGeminiProcess } from './mock-gemini.ts';

const batch = Number(process.env.AUDIO_BATCH ?? 64);
const concurrency = Number(process.env.AUDIO_CONCURRENCY ?? 8);
const delayMs = Number(process.env.UPSTREAM_DELAY_MS ?? 500);
const counts = (process.env.AUDIO_PROCESSES ?? '1,2,4').split(',').map(Number);
const rounds = Number(process.env.AUDIO_ROUNDS ?? 3);

const progress = (text: string) => process.stderr.write(`\r\x1b[K${text}`);

const mock = await startMockGeminiProcess({ delayMs });
// No audio worker yet: each configuration starts its own.
const stack = await startStack({ env: { AUDIO_CONCURRENCY: String(concurrency) } }).catch((error: unknown) => {
  mock.stop();
  throw error;
});
try {
  await stack.admin('POST', '/api/channel/', { name: 'tts', type: 'gemini', key: mock.apiKey, base_url: mock.url, models: ['bench-tts'], timeout_ms: 30_000 });
  const key = (await stack.admin('POST', '/api/token/', { name: 'bench', unlimited_quota: true })).body.data.key as string;
  const body = JSON.stringify({
    contents: [{ parts: [{ text: 'Two seconds of speech, please.' }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } } },
  });
  const one = async () => {
    const response = await fetch(`${stack.gateway.url}/v1beta/models/bench-tts:generateContent`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key }, body,
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
  };
  /** The whole batch at once; milliseconds until the last reply. */
  const runBatch = async (n: number) => {
    const started = performance.now();
    await Promise.all(Array.from({ length: n }, one));
    return performance.now() - started;
  };

  const rows: Record<string, string | number>[] = [];
  let baseline = 0;
  for (const processes of counts) {
    progress(`starting ${processes} audio-worker process(es)…`);
    const workers: ServiceProcess[] = await Promise.all(Array.from({ length: processes }, () => stack.add('audio-worker')));
    await runBatch(processes * concurrency); // warm-up: connections, JIT, channel cache
    await mock.reset();
    const times: number[] = [];
    for (let round = 0; round < rounds; round++) {
      progress(`${processes} process(es): batch ${round + 1}/${rounds} of ${batch} requests…`);
      times.push(await runBatch(batch));
    }
    const stats = await mock.stats();
    await Promise.all(workers.map((w) => w.stop('SIGTERM')));
    const best = Math.min(...times);
    const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    if (processes === counts[0]) baseline = median;
    const ideal = Math.ceil(batch / (processes * concurrency)) * delayMs;
    rows.push({
      processes,
      'jobs at once': processes * concurrency,
      'wall s (median)': (median / 1000).toFixed(2),
      'wall s (best)': (best / 1000).toFixed(2),
      'req/s': Math.round(batch / (median / 1000)),
      [`speed-up vs ${counts[0]}`]: `${(baseline / median).toFixed(2)}×`,
      'ideal s': (ideal / 1000).toFixed(2),
      'upstream max in flight': stats.maxInFlight,
    });
  }
  progress('');
  console.log(`batch of ${batch} requests sent at once, upstream ${delayMs} ms per request, AUDIO_CONCURRENCY=${concurrency}, median of ${rounds} batches`);
  console.table(rows);
} finally {
  await stack.stop();
  mock.stop();
}
