/**
 * The audio Gemini's speech models return: raw signed 16-bit little-endian PCM, described by a
 * mimeType such as `audio/L16;codec=pcm;rate=24000`. Players need a container around it, so
 * this also writes the 44-byte WAV header that makes the bytes playable.
 */

export interface PcmFormat {
  sampleRate: number;
  channels: number;
  bitsPerSample: number;
}

/** What Gemini's TTS models produce: 24 kHz, 16-bit, mono. */
export const GEMINI_PCM_FORMAT: PcmFormat = { sampleRate: 24_000, channels: 1, bitsPerSample: 16 };

export const GEMINI_PCM_MIME_TYPE = 'audio/L16;codec=pcm;rate=24000';

/** Reads `rate=` (and `channels=`) from an `audio/L16` mimeType; the rest is Gemini's default. */
export function pcmFormatFromMimeType(mimeType: string | undefined): PcmFormat {
  const format = { ...GEMINI_PCM_FORMAT };
  for (const parameter of (mimeType ?? '').split(';').slice(1)) {
    const [name, value] = parameter.split('=').map((s) => s.trim().toLowerCase());
    const number = Number(value);
    if (!Number.isInteger(number) || number <= 0) continue;
    if (name === 'rate') format.sampleRate = number;
    if (name === 'channels') format.channels = number;
  }
  return format;
}

/** Milliseconds of sound in `bytes` of PCM. */
export function pcmDurationMs(bytes: number, format: PcmFormat = GEMINI_PCM_FORMAT): number {
  return (bytes / (format.channels * (format.bitsPerSample / 8)) / format.sampleRate) * 1000;
}

export const WAV_HEADER_BYTES = 44;

/** A canonical RIFF/WAVE file (PCM, one `fmt ` and one `data` chunk) around raw PCM. */
export function encodeWav(pcm: Uint8Array, format: PcmFormat = GEMINI_PCM_FORMAT): Buffer {
  const blockAlign = format.channels * (format.bitsPerSample / 8);
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm.byteLength, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16); // size of the fmt chunk
  header.writeUInt16LE(1, 20); // audio format 1: integer PCM
  header.writeUInt16LE(format.channels, 22);
  header.writeUInt32LE(format.sampleRate, 24);
  header.writeUInt32LE(format.sampleRate * blockAlign, 28); // byte rate
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(format.bitsPerSample, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm.byteLength, 40);
  return Buffer.concat([header, pcm]);
}
