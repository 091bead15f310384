import { describe, expect, it } from 'vitest';
import { GEMINI_PCM_MIME_TYPE, WAV_HEADER_BYTES, encodeWav, pcmDurationMs, pcmFormatFromMimeType } from './pcm-audio.ts';

describe('pcmFormatFromMimeType', () => {
  it("reads Gemini's mimeType, and other rates", () => {
    expect(pcmFormatFromMimeType(GEMINI_PCM_MIME_TYPE)).toEqual({ sampleRate: 24_000, channels: 1, bitsPerSample: 16 });
    expect(pcmFormatFromMimeType('audio/L16; codec=pcm; rate=16000').sampleRate).toBe(16_000);
    expect(pcmFormatFromMimeType('audio/L16;rate=48000;channels=2')).toEqual({ sampleRate: 48_000, channels: 2, bitsPerSample: 16 });
    expect(pcmFormatFromMimeType(undefined).sampleRate).toBe(24_000);
  });

  it('turns a byte count into a duration', () => {
    expect(pcmDurationMs(48_000)).toBe(1000);
  });
});

describe('encodeWav', () => {
  it('writes a valid 44-byte RIFF/WAVE header for 24 kHz 16-bit mono', () => {
    const pcm = Buffer.alloc(4800, 7); // 100 ms
    const wav = encodeWav(pcm);
    expect(wav.length).toBe(WAV_HEADER_BYTES + pcm.length);
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.toString('ascii', 8, 12)).toBe('WAVE');
    expect(wav.toString('ascii', 12, 16)).toBe('fmt ');
    expect(wav.readUInt32LE(16)).toBe(16);
    expect(wav.readUInt16LE(20)).toBe(1);
    expect(wav.readUInt16LE(22)).toBe(1);
    expect(wav.readUInt32LE(24)).toBe(24_000);
    expect(wav.readUInt32LE(28)).toBe(48_000);
    expect(wav.readUInt16LE(32)).toBe(2);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.toString('ascii', 36, 40)).toBe('data');
    expect(wav.readUInt32LE(40)).toBe(pcm.length);
    expect(wav.subarray(WAV_HEADER_BYTES).equals(pcm)).toBe(true);
  });

  it('follows the format it is given', () => {
    const wav = encodeWav(Buffer.alloc(8), { sampleRate: 16_000, channels: 2, bitsPerSample: 16 });
    expect(wav.readUInt16LE(22)).toBe(2);
    expect(wav.readUInt32LE(24)).toBe(16_000);
    expect(wav.readUInt32LE(28)).toBe(64_000);
    expect(wav.readUInt16LE(32)).toBe(4);
  });
});
