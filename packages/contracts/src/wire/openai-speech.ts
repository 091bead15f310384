/**
 * OpenAI's text-to-speech wire format (`POST /v1/audio/speech`): the request with OpenAI's
 * bounds (a 400 names the field), the audio formats it answers in, and the events of its
 * `stream_format: "sse"`.
 */
import { z } from 'zod';
import { modelField } from '../validation.ts';
import { checkSchedulingFields } from '../upstream-scheduling.ts';

/** OpenAI's own bound on `input`. */
export const MAX_SPEECH_INPUT_CHARACTERS = 4096;

export const speechFormats = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
export type SpeechFormat = (typeof speechFormats)[number];

/** The Content-Type of each format, as OpenAI answers it. */
export const speechContentTypes: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

const optional = <S extends z.ZodType>(schema: S) => schema.nullable().optional();

export const speechRequestSchema = z.looseObject({
  model: modelField,
  input: z.string({ error: 'is required and must be a string' }).min(1, 'must not be empty').max(MAX_SPEECH_INPUT_CHARACTERS, `must be at most ${MAX_SPEECH_INPUT_CHARACTERS} characters`),
  voice: z.union([z.string().min(1), z.looseObject({ id: z.string().min(1) })], { error: 'is required: a voice name, or {"id": …}' }),
  instructions: optional(z.string().max(MAX_SPEECH_INPUT_CHARACTERS, `must be at most ${MAX_SPEECH_INPUT_CHARACTERS} characters`)),
  speed: optional(z.number().min(0.25).max(4)),
  response_format: optional(z.enum(speechFormats)),
  stream_format: optional(z.enum(['audio', 'sse'])),
}).superRefine(checkSchedulingFields);

export type SpeechRequest = z.infer<typeof speechRequestSchema>;

/** The voice's name, whether given as a name or as `{id}`. */
export const voiceName = (voice: SpeechRequest['voice']) => (typeof voice === 'string' ? voice : voice.id);

/** `stream_format: "sse"`: audio a piece at a time, then the usage. */
export interface SpeechAudioDelta {
  type: 'speech.audio.delta';
  audio: string;
}

export interface SpeechAudioDone {
  type: 'speech.audio.done';
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}

/**
 * A speech job's first piece names what its audio is, as a data URL's head before the base64
 * (`data:audio/ogg;base64,…`), and the gateway labels the reply with it: only the worker knows
 * what an upstream sent (an `openai` channel's audio passed through as it came) or what it
 * encoded. Base64 holds no ':', so a piece without the head is audio alone.
 */
export function labelledAudio(mediaType: string, base64: string): string {
  return `data:${mediaType};base64,${base64}`;
}

/** A speech piece's audio (base64), and the media type its head names when it has one. */
export function readAudioPiece(data: string): { mediaType?: string; base64: string } {
  if (!data.startsWith('data:')) return { base64: data };
  const comma = data.indexOf(',');
  if (comma < 0) return { base64: '' };
  return { mediaType: data.slice(5, comma).replace(/;base64$/, ''), base64: data.slice(comma + 1) };
}

/** `type/subtype` with parameters, none of which may break a header or the data URL's head (no comma, no control character). */
const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(?:\s*;\s*[\w!#$&^.+-]+=(?:[\w!#$&^.+-]+|"[^",\\\x00-\x1f\x7f]*"))*$/;

/** An upstream's Content-Type as a label the gateway may answer with; undefined for one it may not. */
export function audioMediaType(contentType: string | undefined): string | undefined {
  const trimmed = contentType?.trim();
  return trimmed && MEDIA_TYPE.test(trimmed) ? trimmed : undefined;
}
