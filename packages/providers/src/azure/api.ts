/**
 * Where an Azure OpenAI resource is and how a channel's credential goes on its requests. Azure
 * serves OpenAI's wire format under a deployment of the resource
 * (`https://{resource}.openai.azure.com/openai/deployments/{deployment}/chat/completions?api-version=…`):
 * the deployment is the channel's upstream model (after its model_mapping), and every request
 * names the API version it is written for. The credential goes in `api-key`, or a bearer token in
 * `Authorization`: the channel's own, or its service principal's (`entra-tokens.ts`).
 *
 * Its failures read as OpenAI's: a 429 waits in the queue, a 401 (a wrong key, an expired or
 * revoked token) counts toward the channel's auto-disable, and drops the service principal's
 * token so the next attempt fetches another.
 */
import type { UpstreamError } from '@gateway/contracts';
import { credentialProblem, readOnce } from '../channel-credential.ts';
import type { OutgoingRequest, ProviderApi } from '../provider.ts';
import { azureCredential, type AzureCredential } from './credential.ts';
import { dropEntraToken, entraTokenFor } from './entra-tokens.ts';

/** The channel's key, parsed once (`readOnce`): its JSON read and its principal's id hashed on the first request, not every one. */
const credentialOf = readOnce(azureCredential);

const deployment = (model: string) => `/openai/deployments/${encodeURIComponent(model)}`;

export const azureApi = {
  /** A channel's base_url is the resource's endpoint, with or without a trailing `/openai`. */
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, '').replace(/\/openai$/, ''),
  prepare(request: OutgoingRequest, key: string): OutgoingRequest | Promise<OutgoingRequest> {
    const credential = credentialOf(key);
    if ('apiKey' in credential) return signedIn(request, credential, { 'api-key': credential.apiKey });
    if ('bearer' in credential) return signedIn(request, credential, { authorization: `Bearer ${credential.bearer}` });
    return entraTokenFor(credential.servicePrincipal).then((token) => signedIn(request, credential, { authorization: `Bearer ${token}` }));
  },
  checkCredential: (key: string) => credentialProblem(azureCredential, key),
  failure(error: UpstreamError, key: string): UpstreamError {
    if (error.kind === 'http' && error.status === 401) forgetToken(key);
    return error;
  },
  streamEncoding: 'sse',
  endpoints: {
    completions: (model: string) => `${deployment(model)}/completions`,
    chat: (model: string) => `${deployment(model)}/chat/completions`,
    embeddings: (model: string) => `${deployment(model)}/embeddings`,
    speech: (model: string) => `${deployment(model)}/audio/speech`,
  },
} satisfies ProviderApi;

/** The request at the credential's API version, with its credential's headers under the request's own. */
function signedIn(request: OutgoingRequest, credential: AzureCredential, auth: Record<string, string>): OutgoingRequest {
  const url = new URL(request.url);
  url.searchParams.set('api-version', credential.apiVersion);
  return { ...request, url: url.toString(), headers: { ...auth, ...request.headers } };
}

function forgetToken(key: string): void {
  try {
    const credential = credentialOf(key);
    if ('servicePrincipal' in credential) dropEntraToken(credential.servicePrincipal);
  } catch {
    /* a key it cannot read holds no token */
  }
}
