/**
 * A WAV read whole carries its real sizes. Streamed, its length is not known when its header is
 * sent, so the RIFF and data sizes are 0xFFFFFFFF (OpenAI's streamed WAV does the same, and so
 * does FFmpeg writing to a pipe); some readers (Python's `wave`) take them at face value and
 * read past the end. A reply the client reads as one file is therefore gathered whole and its
 * sizes written before it is sent.
 */

/** Sets the RIFF size and the `data` chunk's size of a whole RIFF/WAVE file in place; anything else is left as it is. */
export function setWavSizes(wav: Buffer): void {
  if (wav.length < 12 || wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') return;
  wav.writeUInt32LE(wav.length - 8, 4);
  for (let at = 12; at + 8 <= wav.length;) {
    const id = wav.toString('ascii', at, at + 4);
    const size = wav.readUInt32LE(at + 4);
    if (id === 'data') {
      wav.writeUInt32LE(wav.length - (at + 8), at + 4);
      return;
    }
    // A chunk before `data` of unknown size cannot be stepped over.
    if (size === 0xffffffff) return;
    at += 8 + size + (size % 2);
  }
}

/** Bytes a piece of a WAV gathered whole is sent in. */
const SLICE_BYTES = 256 * 1024;

/** The audio gathered whole, its sizes set when it is a WAV, then given back a slice at a time. */
export async function* wholeWav(audio: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of audio) parts.push(chunk);
  const wav = Buffer.concat(parts);
  setWavSizes(wav);
  for (let at = 0; at < wav.length; at += SLICE_BYTES) yield wav.subarray(at, at + SLICE_BYTES);
}
