import { describe, expect, it } from 'vitest';
import type { GeminiGenerateResponse } from '@gateway/contracts';
import { audioMsOf } from './usage-estimate.ts';

/** A candidate holding `seconds` of Gemini's PCM (24 kHz, 16-bit, mono). */
const candidate = (seconds: number) => ({
  content: { role: 'model', parts: [{ inlineData: { mimeType: 'audio/L16;codec=pcm;rate=24000', data: Buffer.alloc(48_000 * seconds).toString('base64') } }] },
});

describe('the audio a reply holds, for its usage estimate', () => {
  it('counts every candidate, not the first alone', () => {
    expect(audioMsOf({ candidates: [candidate(2)] } as GeminiGenerateResponse)).toBe(2000);
    expect(audioMsOf({ candidates: [candidate(2), candidate(2), candidate(1)] } as GeminiGenerateResponse)).toBe(5000);
    expect(audioMsOf({} as GeminiGenerateResponse)).toBe(0);
  });
});
