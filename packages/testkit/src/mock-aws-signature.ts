/**
 * What AWS checks of a signed request, for the mock Bedrock runtime: the `Authorization` header's
 * Signature V4 (its access key known, its date within five minutes, its session token the one
 * issued with the key, and its signature the one computed again, with the key's secret, over the
 * method, path, query, the headers it names and the body as they arrived). The signature is
 * computed by the AWS SDK's own signer (`@smithy/signature-v4`), so the mock refuses exactly what
 * a request changed after signing, or signed with another secret, region or service, would be.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ReceivedRequest } from './mock-upstream.ts';

export interface MockAwsKey {
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials come with one; the request must carry it as `x-amz-security-token`. */
  sessionToken?: string;
}

/** AWS's refusal, as its error type (the `x-amzn-ErrorType` header) and its body's message. */
export interface AwsRefusal {
  type: 'UnrecognizedClientException' | 'InvalidSignatureException' | 'MissingAuthenticationTokenException';
  message: string;
}

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const FIVE_MINUTES = 5 * 60 * 1000;

/** AWS's `x-amz-date` (`20240101T120000Z`) as a Date. */
const dateOf = (amzDate: string) => new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));

/** Undefined when the request is signed as AWS would accept it for `service` in `region`. */
export async function awsSignatureRefusal(request: ReceivedRequest, keys: readonly MockAwsKey[], region: string, service: string, now = Date.now()): Promise<AwsRefusal | undefined> {
  const header = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined);
  const authorization = header('authorization');
  const amzDate = header('x-amz-date');
  if (!authorization || !amzDate) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const parts = AUTHORIZATION.exec(authorization);
  const key = parts ? keys.find((k) => k.accessKeyId === parts[1]) : undefined;
  if (!parts || !key) return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  if (key.sessionToken !== undefined && header('x-amz-security-token') !== key.sessionToken) {
    return { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' };
  }
  const signedAt = dateOf(amzDate);
  if (Number.isNaN(signedAt.getTime()) || Math.abs(now - signedAt.getTime()) > FIVE_MINUTES) {
    return { type: 'InvalidSignatureException', message: `Signature expired: ${amzDate} is now earlier than the allowed time window.` };
  }
  const [, , , scopeRegion, scopeService, signedHeaders, signature] = parts;
  const mismatch: AwsRefusal = {
    type: 'InvalidSignatureException',
    message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
  };
  if (scopeRegion !== region || scopeService !== service) return mismatch;
  const url = new URL(request.path, 'http://mock');
  const headers: Record<string, string> = {};
  for (const name of signedHeaders!.split(';')) headers[name] = header(name) ?? '';
  const signer = new SignatureV4({ service, region, credentials: key, sha256: Sha256 });
  const again = await signer.sign(
    { method: request.method, protocol: 'http:', hostname: headers.host ?? '', path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body: request.raw },
    { signingDate: signedAt },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(again.headers.authorization))?.[1];
  return expected === signature ? undefined : mismatch;
}
