/** Where an OpenAI-style upstream is and how to present a channel's key to it. */
import type { ProviderApi } from '../provider.ts';

export const openaiApi = {
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, ''),
  headers: (key: string, stream: boolean): Record<string, string> => ({
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
  }),
  endpoints: {
    completions: () => '/v1/completions',
    chat: () => '/v1/chat/completions',
    embeddings: () => '/v1/embeddings',
    speech: () => '/v1/audio/speech',
    responses: () => '/v1/responses',
  },
} satisfies ProviderApi;
