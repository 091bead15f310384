/**
 * A `bedrock` channel's key: an AWS access key as a structured credential, a JSON object in the
 * key field:
 *
 *   {"access_key_id": "AKIA…", "secret_access_key": "…", "region": "us-east-1"}
 *   {"access_key_id": "ASIA…", "secret_access_key": "…", "session_token": "…", "region": "eu-central-1"}
 *
 * `region` is the one the channel's base_url serves (`https://bedrock-runtime.{region}.amazonaws.com`),
 * which the signature names; `session_token` comes with temporary credentials (STS).
 */
import { badCredential, credentialField, structuredCredential } from '../channel-credential.ts';

export interface BedrockCredential {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
}

export function bedrockCredential(key: string): BedrockCredential {
  const structured = structuredCredential(key, 'bedrock');
  if (!structured) throw badCredential('bedrock', 'is not a JSON object with "access_key_id", "secret_access_key" and "region"');
  const accessKeyId = credentialField(structured, 'access_key_id', 'bedrock');
  const secretAccessKey = credentialField(structured, 'secret_access_key', 'bedrock');
  const region = credentialField(structured, 'region', 'bedrock');
  if (!accessKeyId || !secretAccessKey || !region) throw badCredential('bedrock', 'lacks one of "access_key_id", "secret_access_key" and "region"');
  const sessionToken = credentialField(structured, 'session_token', 'bedrock');
  return { accessKeyId, secretAccessKey, region, ...(sessionToken ? { sessionToken } : {}) };
}
