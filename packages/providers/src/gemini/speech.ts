/**
 * OpenAI's text-to-speech served by a Gemini speech model: the request translated into a
 * `generateContent` call for audio, with OpenAI's voice mapped to one of Gemini's prebuilt voices
 * (a Gemini voice name is taken as it is) and its `instructions` said before the text, as
 * Gemini's documentation phrases style prompts. The reply is Gemini's 24 kHz PCM, which the
 * audio worker encodes into the format asked for (and to the speed asked for).
 */
import { ownValue, upstreamFailure, voiceName, type GeminiGenerateResponse, type SpeechRequest } from '@gateway/contracts';
import type { OperationMapping } from '../provider.ts';
import { fromUpstreamResponse } from './generate.ts';

/** OpenAI's voices and the Gemini voice of the nearest character (Google's own descriptions in brackets). */
export const openaiVoices: Record<string, string> = {
  alloy: 'Kore', // firm
  ash: 'Charon', // informative
  ballad: 'Algieba', // smooth
  coral: 'Aoede', // breezy
  echo: 'Puck', // upbeat
  fable: 'Fenrir', // excitable
  nova: 'Leda', // youthful
  onyx: 'Orus', // firm
  sage: 'Iapetus', // clear
  shimmer: 'Zephyr', // bright
  verse: 'Enceladus', // breathy
  marin: 'Despina', // smooth
  cedar: 'Alnilam', // firm
};

/** Gemini's 30 prebuilt voices. */
export const geminiVoices = [
  'Zephyr', 'Puck', 'Charon', 'Kore', 'Fenrir', 'Leda', 'Orus', 'Aoede', 'Callirrhoe', 'Autonoe',
  'Enceladus', 'Iapetus', 'Umbriel', 'Algieba', 'Despina', 'Erinome', 'Algenib', 'Rasalgethi', 'Laomedeia', 'Achernar',
  'Alnilam', 'Schedar', 'Gacrux', 'Pulcherrima', 'Achird', 'Zubenelgenubi', 'Vindemiatrix', 'Sadachbia', 'Sadaltager', 'Sulafat',
];

const byLowerCase = new Map(geminiVoices.map((v) => [v.toLowerCase(), v]));

/** The Gemini voice for an OpenAI or Gemini voice name; an unknown one is the caller's 400. */
export function geminiVoiceFor(voice: string): string {
  const found = ownValue(openaiVoices, voice.toLowerCase()) ?? byLowerCase.get(voice.toLowerCase());
  if (found) return found;
  throw upstreamFailure.http(400, `voice "${voice}" is neither an OpenAI voice (${Object.keys(openaiVoices).join(', ')}) nor a Gemini prebuilt voice`, { body: { error: { message: `unknown voice "${voice}"`, type: 'invalid_request_error', param: 'voice', code: null } } });
}

export function toGeminiSpeech(request: SpeechRequest): Record<string, unknown> {
  const text = request.instructions ? `${request.instructions.trim()}: ${request.input}` : request.input;
  return {
    contents: [{ role: 'user', parts: [{ text }] }],
    generationConfig: {
      responseModalities: ['AUDIO'],
      speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: geminiVoiceFor(voiceName(request.voice)) } } },
    },
  };
}

export const speech: OperationMapping<SpeechRequest, GeminiGenerateResponse, GeminiGenerateResponse> = {
  toUpstream: toGeminiSpeech,
  fromReply: fromUpstreamResponse,
  fromEvent: fromUpstreamResponse,
  streamEnd: { name: 'its finishReason', isLast: (event) => event.candidates?.some((candidate) => candidate.finishReason) === true },
};
