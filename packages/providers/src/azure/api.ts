/**
 * Where an Azure OpenAI resource is and how a channel's credential goes on its requests. Azure
 * serves OpenAI's wire format under a deployment of the resource
 * (`https://{resource}.openai.azure.com/openai/deployments/{deployment}/chat/completions?api-version=…`):
 * the deployment is the channel's upstream model (after its model_mapping), and every request
 * names the API version it is written for. Its failures read as OpenAI's: a 429 waits in the
 * queue, a 401 (a wrong key or an expired token) counts toward the channel's auto-disable.
 */
import type { OutgoingRequest, ProviderApi } from '../provider.ts';
import { azureCredential } from './credential.ts';

const deployment = (model: string) => `/openai/deployments/${encodeURIComponent(model)}`;

export const azureApi = {
  /** A channel's base_url is the resource's endpoint, with or without a trailing `/openai`. */
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, '').replace(/\/openai$/, ''),
  prepare(request: OutgoingRequest, key: string): OutgoingRequest {
    const credential = azureCredential(key);
    const url = new URL(request.url);
    url.searchParams.set('api-version', credential.apiVersion);
    const auth: Record<string, string> = 'apiKey' in credential ? { 'api-key': credential.apiKey } : { authorization: `Bearer ${credential.bearer}` };
    return { ...request, url: url.toString(), headers: { ...auth, ...request.headers } };
  },
  streamEncoding: 'sse',
  endpoints: {
    completions: (model: string) => `${deployment(model)}/completions`,
    chat: (model: string) => `${deployment(model)}/chat/completions`,
    embeddings: (model: string) => `${deployment(model)}/embeddings`,
    speech: (model: string) => `${deployment(model)}/audio/speech`,
  },
} satisfies ProviderApi;
