/**
 * @gateway/audio: speech encoded into the formats OpenAI's text-to-speech answers in, off the
 * event loop (FFmpeg processes), and decoded again for checks.
 */
export { encodeSpeech, decodeToPcm, ffmpegPath, tempoFilter, streamingWavHeader, type EncodeOptions } from './speech-encoder.ts';
export { setWavSizes, wholeWav } from './wav-sizes.ts';
