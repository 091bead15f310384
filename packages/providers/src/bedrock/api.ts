/**
 * Where a Bedrock runtime is, how a request is signed, and how its failures read. Every request
 * is signed with AWS Signature V4 (the AWS SDK's own signer, `@smithy/signature-v4`) over its
 * method, path, query, host and body, with the channel's access key (or the worker's own, from
 * the AWS credential chain, where the channel says so) for service `bedrock` in the credential's
 * region. ConverseStream answers in AWS's binary event stream.
 *
 * Failures: AWS answers a key it does not know, a bad signature or an expired session token with
 * 403 (UnrecognizedClientException, InvalidSignatureException, ExpiredTokenException): the
 * channel's credential, reported as the 401 it means, so it counts toward auto-disable.
 * ThrottlingException is a 429, which waits in the queue as any. AWS's error body is
 * `{"message": …}`, handed on in OpenAI's shape.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { UpstreamError, upstreamFailure } from '@gateway/contracts';
import { credentialProblem, readOnce } from '../channel-credential.ts';
import type { OutgoingRequest, ProviderApi } from '../provider.ts';
import { awsCredentialsFromEnvironment } from './aws-credential-chain.ts';
import { bedrockCredential } from './credential.ts';

const modelPath = (model: string) => `/model/${encodeURIComponent(model)}`;

/** The channel's key, parsed once (`readOnce`). */
const credentialOf = readOnce(bedrockCredential);

/** The request signed with Signature V4 for service `bedrock`: `authorization`, `x-amz-date` (and `x-amz-security-token`) added. */
export async function signedForBedrock(request: OutgoingRequest, key: string): Promise<OutgoingRequest> {
  const credential = credentialOf(key);
  const url = new URL(request.url);
  const signer = new SignatureV4({
    service: 'bedrock',
    region: credential.region,
    credentials: 'key' in credential ? credential.key : await awsCredentialsFromEnvironment(),
    sha256: Sha256,
  });
  const signed = await signer.sign({
    method: request.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { ...request.headers, host: url.host },
    body: request.body,
  });
  return { ...request, headers: signed.headers as Record<string, string> };
}

/** AWS's words for a credential it refuses (its error type is in a header the failure does not keep). */
const CREDENTIAL_REFUSED = /security token included in the request is (?:invalid|expired)|signature we calculated does not match|signature expired/i;

export const bedrockApi = {
  baseUrl: (channelBaseUrl: string) => channelBaseUrl.replace(/\/+$/, ''),
  prepare: (request: OutgoingRequest, key: string, stream: boolean) =>
    signedForBedrock({ ...request, headers: { ...request.headers, accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' } }, key),
  checkCredential: (key: string) => credentialProblem(bedrockCredential, key),
  streamEncoding: 'aws-eventstream',
  endpoints: {
    converse: (model: string, stream: boolean) => `${modelPath(model)}/${stream ? 'converse-stream' : 'converse'}`,
    invoke: (model: string) => `${modelPath(model)}/invoke`,
  },
  failure: (error: UpstreamError): UpstreamError => {
    if (error.kind !== 'http') return error;
    const detail = (error.body as { message?: unknown } | undefined)?.message;
    const message = typeof detail === 'string' ? detail : undefined;
    const status = error.status === 403 && message && CREDENTIAL_REFUSED.test(message) ? 401 : error.status;
    if (!message && status === error.status) return error;
    return upstreamFailure.http(status, message ? `upstream answered ${error.status}: ${message}` : error.message, { retryAfter: error.retryAfter, body: message ? { error: { message, type: 'bedrock_error' } } : error.body, cause: error.cause });
  },
} satisfies ProviderApi;
