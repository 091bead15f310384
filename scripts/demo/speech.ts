/**
 * Offline speech for the demo upstream: eSpeak NG compiled to WebAssembly (the `espeak-ng` npm
 * package, a devDependency) speaks the text, and its 22,050 Hz WAV is resampled to the 24 kHz
 * 16-bit mono PCM that Gemini's speech models return. eSpeak sounds robotic; that is the point of
 * a stand-in that needs no network and no model weights.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import ESpeakNg from 'espeak-ng';

const GEMINI_RATE = 24_000;
let wasmBinary: Promise<Buffer> | undefined;

/** The 18 MB WebAssembly binary, read once per process. */
function espeakBinary(): Promise<Buffer> {
  wasmBinary ??= readFile(createRequire(import.meta.url).resolve('espeak-ng/dist/espeak-ng.wasm'));
  return wasmBinary;
}

/** `text` spoken as 24 kHz 16-bit little-endian mono PCM. */
export async function speak(text: string, voice = 'en-us'): Promise<Buffer> {
  const espeak = await ESpeakNg({
    wasmBinary: await espeakBinary(),
    // The text goes in a file, so a text that starts with `-` is never read as an option.
    arguments: ['-v', voice, '-f', 'input.txt', '-w', 'speech.wav'],
    preRun: [(module) => module.FS.writeFile('input.txt', text)],
    print: () => {},
    printErr: () => {},
  });
  return resample(wavSamples(Buffer.from(espeak.FS.readFile('speech.wav'))), GEMINI_RATE);
}

interface Samples { rate: number; pcm: Buffer }

/** The sample rate and the `data` chunk of a 16-bit mono PCM WAV. */
function wavSamples(wav: Buffer): Samples {
  if (wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') throw new Error('eSpeak did not write a WAV file');
  let rate = 0;
  for (let offset = 12; offset + 8 <= wav.length;) {
    const id = wav.toString('latin1', offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === 'fmt ') rate = wav.readUInt32LE(offset + 12);
    // eSpeak writes the WAV as a stream, with 0x7fffffff-ish sizes: the data runs to the end.
    if (id === 'data') return { rate, pcm: wav.subarray(offset + 8, Math.min(wav.length, offset + 8 + size)) };
    offset += 8 + size;
  }
  throw new Error('the WAV file has no data chunk');
}

/** Linear interpolation to `rate`: plenty for speech at these two close rates. */
function resample({ rate: from, pcm }: Samples, rate: number): Buffer {
  const count = Math.floor(pcm.length / 2);
  if (from === rate || count === 0) return pcm.subarray(0, count * 2);
  const out = Buffer.alloc(Math.floor((count * rate) / from) * 2);
  for (let i = 0; i < out.length / 2; i++) {
    const position = (i * from) / rate;
    const left = Math.floor(position);
    const right = Math.min(left + 1, count - 1);
    const fraction = position - left;
    const sample = pcm.readInt16LE(left * 2) * (1 - fraction) + pcm.readInt16LE(right * 2) * fraction;
    out.writeInt16LE(Math.round(sample), i * 2);
  }
  return out;
}
