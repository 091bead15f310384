/** Where an OpenAI-style upstream is and how to present a channel's key to it. */
import { keyInHeaders } from '../channel-credential.ts';
import type { ProviderApi } from '../provider.ts';

export const openaiApi = {
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, ''),
  prepare: keyInHeaders((key) => ({ authorization: `Bearer ${key}` })),
  streamEncoding: 'sse',
  endpoints: {
    completions: () => '/v1/completions',
    chat: () => '/v1/chat/completions',
    embeddings: () => '/v1/embeddings',
    speech: () => '/v1/audio/speech',
    responses: () => '/v1/responses',
  },
} satisfies ProviderApi;
