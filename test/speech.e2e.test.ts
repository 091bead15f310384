/**
 * OpenAI's text-to-speech (`POST /v1/audio/speech`) end to end: real Redis, admin-worker,
 * audio-worker and gateway processes; mock OpenAI and Gemini upstreams over real HTTP; the
 * `openai` SDK and the Vercel AI SDK as clients. Every answer is decoded (FFmpeg) and its
 * duration checked against what the upstream spoke.
 */
import { describe, expect } from 'vitest';
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { experimental_generateSpeech as generateSpeech } from 'ai';
import { decodeToPcm } from '@gateway/audio';
import { pcmDurationMs, type SpeechFormat } from '@gateway/contracts';
import { caught, postJson } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest({ workers: ['audio-worker'], env: { REQUEST_TIMEOUT_MS: '20000' }, channelDefaults: { timeout_ms: 10_000 } })
  .extend('client', async ({ stack }) => (key: string) => new OpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 }));

let seq = 0;
const uniqueModel = () => `tts-model-${++seq}`;
/** 40 characters: 2 s of speech at the mocks' 50 ms a character. */
const TEXT = 'The quick brown fox jumps over the dog!!';

/** Seconds of audio in an answer, decoded by FFmpeg (raw PCM named as such). */
async function secondsOf(audio: Buffer, format: SpeechFormat): Promise<number> {
  return pcmDurationMs((await decodeToPcm(audio, format === 'pcm' ? 's16le' : undefined)).length) / 1000;
}

async function usedQuota(stack: { adminData(method: string, path: string): Promise<any> }, id: number): Promise<number> {
  return (await stack.adminData('GET', `/api/token/${id}`)).used_quota;
}

/** The `data:` events of a server-sent event stream. */
function events(text: string): any[] {
  return text.split('\n\n').filter((block) => block.startsWith('data: ')).map((block) => JSON.parse(block.slice(6)));
}

describe('speech from a gemini channel, encoded by the audio worker', () => {
  for (const format of ['mp3', 'wav', 'pcm', 'opus', 'aac', 'flac'] as const) {
    it(`answers ${format} with the right Content-Type, decoding to the length Gemini spoke`, async ({ upstream, channel, apiKey, client }) => {
      const mock = await upstream.gemini();
      const model = uniqueModel();
      await channel(mock, [model]);
      const { key } = await apiKey();
      const response = await client(key).audio.speech.create({ model, input: TEXT, voice: 'alloy', response_format: format });
      expect(response.headers.get('content-type')).toBe({ mp3: 'audio/mpeg', wav: 'audio/wav', pcm: 'audio/pcm', opus: 'audio/ogg', aac: 'audio/aac', flac: 'audio/flac' }[format]);
      const audio = Buffer.from(await response.arrayBuffer());
      expect(Math.abs((await secondsOf(audio, format)) - 2)).toBeLessThan(0.15);
    });
  }

  it('maps the voice, says the instructions first, applies the speed, and charges what Gemini reported', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [`${model}-up`], { model_mapping: { [model]: `${model}-up` } });
    const key = await apiKey();
    const response = await client(key.key).audio.speech.create({ model, input: TEXT, voice: 'alloy', speed: 2, response_format: 'wav' });
    // At speed 2 the 2 s Gemini spoke last 1 s.
    expect(Math.abs((await secondsOf(Buffer.from(await response.arrayBuffer()), 'wav')) - 1)).toBeLessThan(0.15);
    const sent = mock.received.at(-1)!;
    expect(sent.model).toBe(`${model}-up`);
    expect(sent.body).toMatchObject({ generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } } });

    // A Gemini voice name is taken as it is; instructions come before the text.
    const sse = await fetch(`${stack.gateway.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: TEXT, voice: 'puck', instructions: 'Cheerfully', stream_format: 'sse', response_format: 'pcm' }),
    });
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const received = events(await sse.text());
    const done = received.at(-1);
    expect(done.type).toBe('speech.audio.done');
    const deltas = received.slice(0, -1);
    expect(deltas.every((e) => e.type === 'speech.audio.delta')).toBe(true);
    const pcm = Buffer.concat(deltas.map((e) => Buffer.from(e.audio, 'base64')));
    // "Cheerfully: " and the text, 52 characters: 2.6 s.
    expect(Math.abs(pcmDurationMs(pcm.length) - 2600)).toBeLessThan(60);
    expect((mock.received.at(-1)!.body as any).contents[0].parts[0].text).toBe(`Cheerfully: ${TEXT}`);
    expect((mock.received.at(-1)!.body as any).generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName).toBe('Puck');
    expect(done.usage.total_tokens).toBe(done.usage.input_tokens + done.usage.output_tokens);
    expect(done.usage.output_tokens).toBeGreaterThan(0);
    // Two requests; the key is charged what Gemini reported for both.
    await expect.poll(() => usedQuota(stack, key.id)).toBeGreaterThan(done.usage.total_tokens);
  });

  it('sends the audio as it is encoded: the first bytes arrive while Gemini is still speaking', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.gemini({ streamChunkMs: 200, streamIntervalMs: 150 });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const started = Date.now();
    const response = await fetch(`${stack.gateway.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, input: TEXT, voice: 'nova', response_format: 'mp3' }),
    });
    const reader = response.body!.getReader();
    const first = await reader.read();
    const firstAt = Date.now() - started;
    const parts = [Buffer.from(first.value!)];
    for (let next = await reader.read(); !next.done; next = await reader.read()) parts.push(Buffer.from(next.value));
    const endAt = Date.now() - started;
    // 10 events of 200 ms, 150 ms apart: about 1.35 s of speaking; the first bytes long before.
    expect(endAt).toBeGreaterThan(1300);
    expect(firstAt).toBeLessThan(endAt - 700);
    expect(Math.abs((await secondsOf(Buffer.concat(parts), 'mp3')) - 2)).toBeLessThan(0.15);
  });

  it('refuses an unknown voice, naming it, without a charge', async ({ stack, upstream, channel, apiKey, client }) => {
    const mock = await upstream.gemini();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const error = await caught(client(key.key).audio.speech.create({ model, input: 'hi', voice: 'no-such-voice' }));
    expect(error).toMatchObject({ status: 400 });
    expect(error.message).toMatch(/no-such-voice/);
    // Names every object has (not voices of either table): refused the same, in OpenAI's format.
    for (const voice of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const inherited = await caught(client(key.key).audio.speech.create({ model, input: 'hi', voice }));
      expect(inherited, voice).toMatchObject({ status: 400, error: { type: 'invalid_request_error' } });
      expect(inherited.message, voice).toContain(voice);
    }
    expect(mock.received).toHaveLength(0);
    expect(await usedQuota(stack, key.id)).toBe(0);
  });
});

describe('speech from an openai channel, passed through', () => {
  it('relays the upstream\'s audio in the format asked for, whole through the openai SDK', async ({ upstream, channel, apiKey, client }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [`${model}-up`], { model_mapping: { [model]: `${model}-up` } });
    const { key } = await apiKey();
    for (const format of ['mp3', 'wav', 'pcm'] as const) {
      const response = await client(key).audio.speech.create({ model, input: TEXT, voice: 'coral', response_format: format, instructions: 'Calmly' });
      expect(Math.abs((await secondsOf(Buffer.from(await response.arrayBuffer()), format)) - 2)).toBeLessThan(0.15);
      expect(mock.requests.at(-1)!.body).toMatchObject({ model: `${model}-up`, voice: 'coral', response_format: format, instructions: 'Calmly', stream_format: 'audio' });
    }
  });

  it('wraps the bytes in speech events for stream_format sse, and charges the input', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const key = await apiKey();
    const response = await postJson(`${stack.gateway.url}/v1/audio/speech`, { model, input: TEXT, voice: 'alloy', response_format: 'wav', stream_format: 'sse' }, { authorization: `Bearer ${key.key}` });
    const received = events(response.text);
    const audio = Buffer.concat(received.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio, 'base64')));
    expect(Math.abs((await secondsOf(audio, 'wav')) - 2)).toBeLessThan(0.15);
    expect(received.at(-1)).toEqual({ type: 'speech.audio.done', usage: { input_tokens: 10, output_tokens: 0, total_tokens: 10 } });
    await expect.poll(() => usedQuota(stack, key.id)).toBe(10);
  });

  it('speaks through the Vercel AI SDK\'s generateSpeech', async ({ stack, upstream, channel, apiKey }) => {
    const mock = await upstream.openai();
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const provider = createOpenAI({ baseURL: `${stack.gateway.url}/v1`, apiKey: key });
    const result = await generateSpeech({ model: provider.speech(model), text: TEXT, voice: 'alloy', outputFormat: 'wav', maxRetries: 0 });
    expect(Math.abs((await secondsOf(Buffer.from(result.audio.uint8Array), 'wav')) - 2)).toBeLessThan(0.15);
  });
});

describe('bad speech requests', () => {
  it('are 400s in OpenAI\'s shape naming the field', async ({ stack, apiKey }) => {
    const { key } = await apiKey();
    for (const [body, param] of [
      [{ model: 'm', voice: 'alloy' }, 'input'],
      [{ model: 'm', input: 'x'.repeat(4097), voice: 'alloy' }, 'input'],
      [{ model: 'm', input: 'x' }, 'voice'],
      [{ model: 'm', input: 'x', voice: 'alloy', response_format: 'ogg' }, 'response_format'],
      [{ model: 'm', input: 'x', voice: 'alloy', speed: 5 }, 'speed'],
      [{ model: 'm', input: 'x', voice: 'alloy', stream_format: 'chunks' }, 'stream_format'],
    ] as [unknown, string][]) {
      const reply = await postJson(`${stack.gateway.url}/v1/audio/speech`, body, { authorization: `Bearer ${key}` });
      expect(reply.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      expect(reply.json.error).toMatchObject({ param, type: 'invalid_request_error' });
    }
  });
});
