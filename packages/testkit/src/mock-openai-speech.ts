/**
 * The mock OpenAI upstream's `POST /v1/audio/speech`: a 440 Hz tone lasting 50 ms a character of
 * `input` (at `speed`), in the `response_format` asked for (mp3 unless set), its bytes sent as
 * they are encoded, with the Content-Type OpenAI answers with. 400 for what OpenAI refuses.
 */
import type { ServerResponse } from 'node:http';
import { encodeSpeech } from '@gateway/audio';
import { speechContentTypes, speechFormats, type SpeechFormat } from '@gateway/contracts';

/** Milliseconds of speech a character of input makes, at speed 1. */
export const MOCK_SPEECH_MS_PER_CHARACTER = 50;

async function* tone(durationMs: number, gone: AbortSignal): AsyncGenerator<Buffer> {
  const samples = Math.round((durationMs / 1000) * 24_000);
  for (let at = 0; at < samples && !gone.aborted; at += 2400) {
    const count = Math.min(2400, samples - at);
    const piece = Buffer.alloc(count * 2);
    for (let i = 0; i < count; i++) piece.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * (at + i)) / 24_000)), i * 2);
    yield piece;
  }
}

/** How the mock answers whatever was asked: in another `format`, or labelled with another `contentType`. */
export interface SpeechOverrides {
  format?: SpeechFormat;
  contentType?: string;
}

export async function speak(res: ServerResponse, body: Record<string, unknown>, gone: AbortSignal, overrides: SpeechOverrides = {}): Promise<void> {
  const refuse = (param: string, message: string): void => void
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message, type: 'invalid_request_error', param, code: null } }));
  if (typeof body.input !== 'string' || body.input.length === 0) return refuse('input', 'input is required');
  if (typeof body.voice !== 'string' && typeof (body.voice as { id?: unknown } | undefined)?.id !== 'string') return refuse('voice', 'voice is required');
  const asked = (body.response_format ?? 'mp3') as SpeechFormat;
  if (!speechFormats.includes(asked)) return refuse('response_format', `response_format must be one of ${speechFormats.join(', ')}`);
  const format = overrides.format ?? asked;
  const speed = typeof body.speed === 'number' ? body.speed : 1;
  res.writeHead(200, { 'content-type': overrides.contentType ?? speechContentTypes[format], 'transfer-encoding': 'chunked' });
  for await (const chunk of encodeSpeech(tone([...body.input].length * MOCK_SPEECH_MS_PER_CHARACTER, gone), { format, speed, signal: gone })) {
    if (!res.write(chunk)) await new Promise<void>((resolve) => { res.once('drain', resolve); res.once('close', resolve); });
  }
  res.end();
}
