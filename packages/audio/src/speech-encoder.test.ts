import { describe, expect, it } from 'vitest';
import { pcmDurationMs, speechFormats } from '@gateway/contracts';
import { decodeToPcm, encodeSpeech, tempoFilter } from './speech-encoder.ts';

/** One second of a 440 Hz tone at 24 kHz, 16-bit mono, in pieces of 100 ms. */
async function* tone(seconds = 1): AsyncGenerator<Buffer> {
  for (let piece = 0; piece < seconds * 10; piece++) {
    const samples = Buffer.alloc(2400 * 2);
    for (let i = 0; i < 2400; i++) samples.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * (piece * 2400 + i)) / 24_000)), i * 2);
    yield samples;
  }
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<{ audio: Buffer; pieces: number }> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return { audio: Buffer.concat(parts), pieces: parts.length };
}

describe('encodeSpeech', () => {
  for (const format of speechFormats) {
    it(`encodes PCM as ${format}, which decodes back to the same duration`, async () => {
      const { audio } = await collect(encodeSpeech(tone(2), { format }));
      const pcm = await decodeToPcm(audio, format === 'pcm' ? 's16le' : undefined);
      // Codecs pad a frame or two at the edges.
      expect(Math.abs(pcmDurationMs(pcm.length) - 2000)).toBeLessThan(120);
    });
  }

  it('changes the tempo: at speed 2 the audio lasts half as long, at 0.25 four times as long', async () => {
    const fast = await decodeToPcm((await collect(encodeSpeech(tone(2), { format: 'wav', speed: 2 }))).audio);
    expect(Math.abs(pcmDurationMs(fast.length) - 1000)).toBeLessThan(120);
    const slow = await decodeToPcm((await collect(encodeSpeech(tone(1), { format: 'mp3', speed: 0.25 }))).audio);
    expect(Math.abs(pcmDurationMs(slow.length) - 4000)).toBeLessThan(200);
    expect(tempoFilter(4)).toBe('atempo=2,atempo=2.000000');
  });

  it('yields encoded audio while the PCM still comes, not only at its end', async () => {
    for (const format of ['mp3', 'opus', 'aac', 'flac'] as const) {
      let fed = 0;
      async function* slowly(): AsyncGenerator<Buffer> {
        for await (const piece of tone(2)) {
          fed++;
          yield piece;
          await new Promise((r) => setTimeout(r, 20)); // the pace of a slow feed: what the test is about
        }
      }
      let fedAtFirst = -1;
      for await (const _ of encodeSpeech(slowly(), { format })) {
        if (fedAtFirst < 0) fedAtFirst = fed;
      }
      // 20 pieces of 100 ms: the first output long before the last piece.
      expect(fedAtFirst, format).toBeLessThan(12);
    }
  });

  it('fails the encode, not the process, when FFmpeg cannot be started', async () => {
    const pcm = (async function* () { yield Buffer.alloc(4800); })();
    const chunks = encodeSpeech(pcm, { format: 'mp3', ffmpeg: '/nonexistent/ffmpeg' });
    await expect((async () => { for await (const _ of chunks); })()).rejects.toThrow(/could not be started to encode mp3: .*ENOENT/);
  });

  it('stops its FFmpeg process when the signal aborts', async () => {
    const controller = new AbortController();
    async function* endless(): AsyncGenerator<Buffer> {
      for (;;) {
        yield Buffer.alloc(4800);
        await new Promise((r) => setTimeout(r, 5)); // the pace of the endless feed
      }
    }
    const reading = collect(encodeSpeech(endless(), { format: 'mp3', signal: controller.signal }));
    setTimeout(() => controller.abort(), 200);
    await expect(Promise.race([reading.then(() => 'ended', () => 'ended'), new Promise((r) => setTimeout(() => r('hung'), 5000))])).resolves.toBe('ended');
  });
});
