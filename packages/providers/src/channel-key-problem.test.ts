/**
 * A channel's key as the management API checks it, by its type's provider (`channelKeyProblem`):
 * what `prepare` could not read is named by its field, never by its values; what it reads passes;
 * a type whose provider takes any key takes any.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ChannelType } from '@gateway/contracts';
import { channelKeyProblem } from './registry.ts';

const SECRET = 'very-secret-value-0123456789';
const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const serviceAccount = { type: 'service_account', project_id: 'p', private_key_id: 'k1', private_key: pem, client_email: 'a@p.iam.gserviceaccount.com', region: 'us-central1' };
const json = (value: unknown) => JSON.stringify(value);

const refused: [ChannelType, RegExp, string][] = [
  ['azure', /starts with "\{" but is not JSON/, `{"api_key": "${SECRET}"`],
  ['azure', /"api_key" that is not a non-empty string/, json({ api_key: 42 })],
  ['azure', /more than one of "api_key", "entra_token" and "client_secret"/, json({ api_key: SECRET, client_secret: SECRET, tenant_id: 't', client_id: 'c' })],
  ['azure', /"client_secret" without "tenant_id" or "client_id"/, json({ client_secret: SECRET, client_id: 'c' })],
  ['azure', /neither "api_key", "entra_token" nor/, json({ apikey: SECRET })],
  ['azure', /"api_version" that is not a non-empty string/, json({ api_key: SECRET, api_version: 2024 })],
  ['bedrock', /is not a JSON object with "access_key_id", "secret_access_key" and "region"/, `AKIA${SECRET}`],
  ['bedrock', /is not a JSON object with/, json([SECRET])],
  ['bedrock', /lacks one of "access_key_id", "secret_access_key" and "region"/, json({ access_key_id: 'AKIA1', secret_access_key: SECRET })],
  ['bedrock', /"region" that is not a non-empty string/, json({ access_key_id: 'AKIA1', secret_access_key: SECRET, region: ['us-east-1'] })],
  ['bedrock', /both "access_key_id" and "credentials"/, json({ access_key_id: 'AKIA1', secret_access_key: SECRET, region: 'us-east-1', credentials: 'environment' })],
  ['vertex', /is not a service account's JSON key/, SECRET],
  ['vertex', /lacks "client_email" or "private_key"/, json({ ...serviceAccount, client_email: undefined })],
  ['vertex', /lacks "project_id" \(or "project"\) or "region"/, json({ ...serviceAccount, region: undefined })],
  ['vertex', /"private_key" that is not a PEM private key/, json({ ...serviceAccount, private_key: `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n` })],
];

const accepted: [ChannelType, string, string][] = [
  ['openai', 'anything', `{"api_key": "${SECRET}"`],
  ['anthropic', 'a plain key', `sk-ant-${SECRET}`],
  ['gemini', 'a plain key', SECRET],
  ['azure', 'a plain key', SECRET],
  ['azure', 'an api key and version', json({ api_key: SECRET, api_version: '2025-04-01-preview' })],
  ['azure', 'an Entra ID token', json({ entra_token: SECRET })],
  ['azure', 'a service principal', json({ tenant_id: 't', client_id: 'c', client_secret: SECRET, authority_host: 'http://127.0.0.1:9' })],
  ['bedrock', 'temporary credentials', json({ access_key_id: 'AKIA1', secret_access_key: SECRET, session_token: SECRET, region: 'eu-central-1' })],
  ['bedrock', "the worker's credentials", json({ region: 'us-east-1', credentials: 'environment' })],
  ['vertex', "a service account's JSON key", json(serviceAccount)],
];

describe('channelKeyProblem', () => {
  it.for(refused)('refuses a %s key: %s', ([type, problem, key]) => {
    const found = channelKeyProblem(type, key);
    expect(found).toMatch(problem);
    expect(found).not.toContain(SECRET);
  });

  it.for(accepted)('takes a %s key: %s', ([type, _form, key]) => {
    expect(channelKeyProblem(type, key)).toBeUndefined();
  });
});
