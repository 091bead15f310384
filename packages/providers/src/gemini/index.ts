/**
 * The Gemini-style provider: `{base_url}/v1beta/models/{model}:generateContent` (and
 * `:streamGenerateContent?alt=sse`) with the channel's key in `x-goog-api-key`, for speech.
 */
export { geminiApi } from './api.ts';
export {
  generateContent,
  streamGenerateContent,
  toUpstreamRequest,
  fromUpstreamResponse,
  geminiFailure,
  type GeminiTarget,
} from './generate.ts';
