import { describe, expect, it } from 'vitest';
import { streamingWavHeader } from './speech-encoder.ts';
import { setWavSizes, wholeWav } from './wav-sizes.ts';

const pcm = Buffer.alloc(1000, 1);

describe('wholeWav', () => {
  it('writes the real RIFF and data sizes over the streaming header\'s unknown ones', async () => {
    const parts: Buffer[] = [];
    for await (const part of wholeWav((async function* () { yield streamingWavHeader(); yield pcm.subarray(0, 500); yield pcm.subarray(500); })())) parts.push(part);
    const wav = Buffer.concat(parts);
    expect(wav.length).toBe(44 + 1000);
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.readUInt32LE(40)).toBe(1000);
  });

  it('steps over chunks before the data (a LIST written by FFmpeg), and leaves what is no WAV alone', () => {
    const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([5, 0, 0, 0]), Buffer.from('INFOx'), Buffer.alloc(1)]);
    const header = streamingWavHeader();
    const wav = Buffer.concat([header.subarray(0, 36), list, header.subarray(36), pcm]);
    setWavSizes(wav);
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.readUInt32LE(36 + list.length + 4)).toBe(1000);
    const mp3 = Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb', 'latin1');
    const copy = Buffer.from(mp3);
    setWavSizes(mp3);
    expect(mp3).toEqual(copy);
  });
});
