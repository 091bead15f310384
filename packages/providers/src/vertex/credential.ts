/**
 * A `vertex` channel's key: the Google Cloud service account's JSON key, as the console
 * downloads it, with the region its requests go to beside its fields:
 *
 *   {"type": "service_account", "project_id": "my-project", "private_key_id": "…",
 *    "private_key": "-----BEGIN PRIVATE KEY-----\n…", "client_email": "gateway@my-project.iam.gserviceaccount.com",
 *    "token_uri": "https://oauth2.googleapis.com/token", …, "region": "us-central1"}
 *
 * `region` (or `location`) is the Vertex AI location every path names (`global` too); `project`
 * names another project than the key's own `project_id` (a key of one project serving another's
 * quota). `token_uri` is where the access token is asked for (Google's, unless the key says
 * another). The key's other fields are not read. A key without `client_email` or `private_key`
 * is the channel's failure (`badCredential`).
 */
import { createHash, createPrivateKey } from 'node:crypto';
import { badCredential, credentialField, credentialProblem, readOnce, structuredCredential } from '../channel-credential.ts';

/** Google's OAuth 2.0 token endpoint, the one every service account key names. */
export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';

export interface VertexCredential {
  clientEmail: string;
  privateKey: string;
  privateKeyId?: string;
  tokenUri: string;
  project: string;
  region: string;
  /** Names this service account key among others (a hash of it, never the key), for the token cache. */
  id: string;
}

/** A `vertex` channel's key, parsed once (`readOnce`). */
export const vertexCredential = readOnce(readVertexCredential);

/**
 * What is wrong with a `vertex` channel's key, or undefined: its fields as `vertexCredential`
 * reads them, and a `private_key` Node can sign with (else the channel's first token request fails).
 */
export function vertexCredentialProblem(key: string): string | undefined {
  return credentialProblem((k) => {
    const { privateKey } = readVertexCredential(k);
    try {
      createPrivateKey(privateKey);
    } catch {
      throw badCredential('vertex', 'has a "private_key" that is not a PEM private key');
    }
  }, key);
}

function readVertexCredential(key: string): VertexCredential {
  const structured = structuredCredential(key, 'vertex');
  if (!structured) throw badCredential('vertex', 'is not a service account\'s JSON key with a "region"');
  const field = (name: string) => credentialField(structured, name, 'vertex');
  const clientEmail = field('client_email');
  const privateKey = field('private_key');
  if (!clientEmail || !privateKey) throw badCredential('vertex', 'lacks "client_email" or "private_key" (a service account\'s JSON key has both)');
  const project = field('project') ?? field('project_id');
  const region = field('region') ?? field('location');
  if (!project || !region) throw badCredential('vertex', 'lacks "project_id" (or "project") or "region"');
  const privateKeyId = field('private_key_id');
  return {
    clientEmail,
    privateKey,
    ...(privateKeyId ? { privateKeyId } : {}),
    tokenUri: field('token_uri') ?? GOOGLE_TOKEN_URI,
    project,
    region,
    id: createHash('sha256').update(key).digest('base64url'),
  };
}
