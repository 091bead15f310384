/**
 * The OpenAI-style provider: `{base_url}/v1/completions` with `Authorization: Bearer <key>`,
 * whole or streamed.
 */
export { openaiApi } from './api.ts';
export {
  complete,
  streamCompletion,
  normalizeUsage,
  toUpstreamRequest,
  fromUpstreamCompletion,
  fromUpstreamChunk,
  type OpenAITarget,
} from './complete.ts';
