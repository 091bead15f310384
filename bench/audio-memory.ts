/**
 * Large audio replies without bloating Redis: 1,000 speech requests whose replies are 1 MB each
 * (786,432 bytes of PCM = 1 MiB of base64) through real gateway, audio-worker and admin-worker
 * processes and a mock Gemini upstream in its own process. Samples Redis `used_memory` before,
 * during (peak) and after, and fails when "after" is more than 20 MB above "before".
 *
 *   node bench/audio-memory.ts                   # 1,000 requests, 32 at a time
 *   AUDIO_MEMORY_REQUESTS=200 AUDIO_MEMORY_CONCURRENCY=16 node bench/audio-memory.ts
 */
import { Redis } from 'ioredis';
import { QUEUE_PREFIX } from '@gateway/contracts';
import { startStack } from '@gateway/testkit';
import { startMockGeminiProcess } from './mock-gemini.ts';

const requests = Number(process.env.AUDIO_MEMORY_REQUESTS ?? 1000);
const concurrency = Number(process.env.AUDIO_MEMORY_CONCURRENCY ?? 32);
const pcmBytes = 786_432;
const limitMb = 20;

const progress = (text: string) => process.stderr.write(`\r\x1b[K${text}`);
const mb = (bytes: number) => bytes / 1024 / 1024;

const mock = await startMockGeminiProcess({ pcmBytes });
const stack = await startStack({ workers: ['audio-worker'], env: { AUDIO_CONCURRENCY: '16' } }).catch((error: unknown) => {
  mock.stop();
  throw error;
});
const redis = new Redis(stack.redis.url);
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1] ?? 0);

try {
  await stack.admin('POST', '/api/channel/', { name: 'tts', type: 'gemini', key: mock.apiKey, base_url: mock.url, models: ['bench-tts'] });
  const key = (await stack.admin('POST', '/api/token/', { name: 'bench', unlimited_quota: true })).body.data.key as string;
  const body = JSON.stringify({
    contents: [{ parts: [{ text: 'A clip of about sixteen seconds.' }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
  });
  let received = 0;
  let failed = 0;
  const one = async () => {
    const response = await fetch(`${stack.gateway.url}/v1beta/models/bench-tts:generateContent`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key }, body,
    });
    const bytes = (await response.arrayBuffer()).byteLength;
    if (response.status !== 200 || bytes < 1024 * 1024) failed++;
    else received += bytes;
  };
  const run = async (n: number, parallel: number) => {
    let started = 0;
    let done = 0;
    await Promise.all(Array.from({ length: Math.min(parallel, n) }, async () => {
      while (started < n) {
        started++;
        await one();
        if (++done % 50 === 0) progress(`${done}/${n} replies`);
      }
    }));
  };

  progress('warming up…');
  await run(50, 8);
  await new Promise((r) => setTimeout(r, 1000));
  const before = await usedMemory();
  let peak = before;
  const sampler = setInterval(() => void usedMemory().then((m) => (peak = Math.max(peak, m))), 20);
  const startedAt = performance.now();
  received = 0;
  failed = 0;
  await run(requests, concurrency);
  const seconds = (performance.now() - startedAt) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, await usedMemory());
  await new Promise((r) => setTimeout(r, 2000));
  const after = await usedMemory();
  progress('');

  const replyStreams = await redis.keys('gw:replies:*');
  const replyEntries = (await Promise.all(replyStreams.map((k) => redis.xlen(k)))).reduce((a, b) => a + b, 0);
  const events = await redis.xlen(`${QUEUE_PREFIX}:audio:events`);
  console.table([
    { measure: 'requests', value: `${requests} (${concurrency} at a time), ${failed} failed` },
    { measure: 'reply size', value: `${(received / Math.max(1, requests - failed) / 1e6).toFixed(2)} MB each, ${(received / 1e9).toFixed(2)} GB in all` },
    { measure: 'time', value: `${seconds.toFixed(1)} s (${(requests / seconds).toFixed(0)} req/s, ${(received / 1e6 / seconds).toFixed(0)} MB/s)` },
    { measure: 'Redis used_memory before', value: `${mb(before).toFixed(1)} MB` },
    { measure: 'Redis used_memory peak', value: `${mb(peak).toFixed(1)} MB (+${mb(peak - before).toFixed(1)} MB)` },
    { measure: 'Redis used_memory after', value: `${mb(after).toFixed(1)} MB (${after >= before ? '+' : ''}${mb(after - before).toFixed(1)} MB)` },
    { measure: 'reply stream entries left', value: String(replyEntries) },
    { measure: 'audio events stream entries', value: `${events} (each without the result)` },
  ]);
  if (failed > 0 || mb(after - before) > limitMb) {
    console.error(`FAILED: ${failed} failed requests; after - before = ${mb(after - before).toFixed(1)} MB (limit ${limitMb} MB)`);
    process.exitCode = 1;
  } else {
    console.log(`ok: Redis is back within ${limitMb} MB of where it started`);
  }
} finally {
  redis.disconnect();
  await stack.stop();
  mock.stop();
}
