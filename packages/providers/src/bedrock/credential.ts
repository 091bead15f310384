/**
 * A `bedrock` channel's key: an AWS access key as a structured credential, a JSON object in the
 * key field:
 *
 *   {"access_key_id": "AKIA…", "secret_access_key": "…", "region": "us-east-1"}
 *   {"access_key_id": "ASIA…", "secret_access_key": "…", "session_token": "…", "region": "eu-central-1"}
 *
 * or the region alone with the worker's own AWS credentials, found as every AWS SDK finds them
 * (`aws-credential-chain.ts`: the environment, the shared config and credentials files and
 * `AWS_PROFILE`, SSO, web identity, the ECS or EC2 role):
 *
 *   {"region": "us-east-1", "credentials": "environment"}
 *
 * `region` is the one the channel's base_url serves (`https://bedrock-runtime.{region}.amazonaws.com`),
 * which the signature names; `session_token` comes with temporary credentials (STS).
 */
import { badCredential, credentialField, structuredCredential } from '../channel-credential.ts';

export interface AwsKey {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** The channel's own key, or `environment`: the worker's AWS credential chain. */
export type BedrockCredential = { region: string } & ({ key: AwsKey } | { fromEnvironment: true });

export function bedrockCredential(key: string): BedrockCredential {
  const structured = structuredCredential(key, 'bedrock');
  if (!structured) throw badCredential('bedrock', 'is not a JSON object with "access_key_id", "secret_access_key" and "region"');
  const region = credentialField(structured, 'region', 'bedrock');
  const source = credentialField(structured, 'credentials', 'bedrock');
  if (source !== undefined) {
    if (source !== 'environment') throw badCredential('bedrock', 'has "credentials" other than "environment"');
    if (!region) throw badCredential('bedrock', 'lacks "region"');
    if (structured.access_key_id !== undefined) throw badCredential('bedrock', 'has both "access_key_id" and "credentials": it takes one');
    return { region, fromEnvironment: true };
  }
  const accessKeyId = credentialField(structured, 'access_key_id', 'bedrock');
  const secretAccessKey = credentialField(structured, 'secret_access_key', 'bedrock');
  if (!accessKeyId || !secretAccessKey || !region) throw badCredential('bedrock', 'lacks one of "access_key_id", "secret_access_key" and "region" (or "credentials": "environment")');
  const sessionToken = credentialField(structured, 'session_token', 'bedrock');
  return { region, key: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
}
