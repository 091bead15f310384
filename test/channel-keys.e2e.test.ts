/**
 * A channel's key checked by the management API end to end (real Redis, admin-worker and gateway
 * processes, HTTP): a structured credential its type's provider cannot read, or a plain key where
 * the provider takes none, is refused at create and at update with a 400 naming the problem,
 * never the key's values, and nothing is written; a good key of each form is taken.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { Stack } from '@gateway/testkit';
import { stackTest } from '@gateway/testkit/fixtures';

const it = stackTest();
const SECRET = 'upstream-secret-never-shown-42';
const BASE_URL = 'http://127.0.0.1:9';
const json = (value: unknown) => JSON.stringify(value);
const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const serviceAccount = { type: 'service_account', project_id: 'p', private_key_id: 'k1', private_key: pem, client_email: 'a@p.iam.gserviceaccount.com', region: 'us-central1' };
const bedrockKey = { access_key_id: 'AKIAEXAMPLE', secret_access_key: SECRET, region: 'us-east-1' };

const channelCount = async (stack: Stack): Promise<number> => (await stack.admin('GET', '/api/channel/?page_size=100')).body.data.total;
const create = (stack: Stack, type: string, key: string) => stack.admin('POST', '/api/channel/', { name: `${type}-key`, type, key, base_url: BASE_URL, models: 'm' });

/** A refusal as the management API gives it: a 400 in its own shape, naming `problem`, without the secret. */
function expectRefused(answer: { status: number; body: any }, problem: RegExp) {
  expect(answer.status).toBe(400);
  expect(answer.body).toEqual({ success: false, message: expect.stringMatching(problem) });
  expect(answer.body.message).toMatch(/^invalid key: /);
  expect(JSON.stringify(answer.body)).not.toContain(SECRET);
}

describe('a channel key the provider cannot read', () => {
  it.for([
    ['azure', 'not JSON', `{"api_key": "${SECRET}"`, /azure channel's key starts with "\{" but is not JSON/],
    ['azure', 'a key and a principal', json({ api_key: SECRET, client_secret: SECRET, tenant_id: 't', client_id: 'c' }), /more than one of "api_key", "entra_token" and "client_secret"/],
    ['azure', 'a principal without tenant', json({ client_secret: SECRET, client_id: 'c' }), /"client_secret" without "tenant_id" or "client_id"/],
    ['azure', 'a version of the wrong type', json({ api_key: SECRET, api_version: 20241021 }), /"api_version" that is not a non-empty string/],
    ['bedrock', 'a plain key', `AKIA-${SECRET}`, /bedrock channel's key is not a JSON object with "access_key_id", "secret_access_key" and "region"/],
    ['bedrock', 'no region', json({ access_key_id: 'AKIAEXAMPLE', secret_access_key: SECRET }), /lacks one of "access_key_id", "secret_access_key" and "region"/],
    ['bedrock', 'a session token of the wrong type', json({ ...bedrockKey, session_token: 7 }), /"session_token" that is not a non-empty string/],
    ['vertex', 'a plain key', SECRET, /vertex channel's key is not a service account's JSON key/],
    ['vertex', 'no private key', json({ ...serviceAccount, private_key: undefined }), /lacks "client_email" or "private_key"/],
    ['vertex', 'a private key that is no key', json({ ...serviceAccount, private_key: `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n` }), /"private_key" that is not a PEM private key/],
  ] as const)('is refused at create (%s: %s)', async ([type, _case, key, problem], { stack }) => {
    const before = await channelCount(stack);
    expectRefused(await create(stack, type, key), problem);
    expect(await channelCount(stack)).toBe(before);
  });

  it('is refused at update, for the stored type or the new one, and the channel keeps its good key', async ({ stack }) => {
    const made = (await create(stack, 'bedrock', json(bedrockKey))).body.data;
    const broken = await stack.admin('PUT', '/api/channel/', { id: made.id, key: json({ ...bedrockKey, region: undefined }), priority: 5 });
    expectRefused(broken, /bedrock channel's key lacks one of "access_key_id", "secret_access_key" and "region"/);
    const kept = (await stack.admin('GET', `/api/channel/${made.id}`)).body.data;
    expect(kept).toMatchObject({ type: 'bedrock', key: made.key, priority: made.priority });

    // A plain key is an openai channel's, not a vertex channel's: checked for the type it becomes.
    const openai = (await create(stack, 'openai', `sk-${SECRET}`)).body.data;
    expectRefused(await stack.admin('PUT', '/api/channel/', { id: openai.id, type: 'vertex', key: `sk-${SECRET}` }), /vertex channel's key is not a service account's JSON key/);
    expect((await stack.admin('GET', `/api/channel/${openai.id}`)).body.data.type).toBe('openai');

    const mended = await stack.admin('PUT', '/api/channel/', { id: made.id, key: json({ ...bedrockKey, region: 'eu-west-1' }), priority: 5 });
    expect(mended.status).toBe(200);
    expect(mended.body.data).toMatchObject({ id: made.id, priority: 5 });
    expect((await stack.admin('PUT', '/api/channel/', { id: 99_999, key: json(bedrockKey) })).status).toBe(404);
  });
});

describe('a channel key the provider reads', () => {
  it.for([
    ['openai', 'anything', `{"not": "checked by openai"}`],
    ['azure', 'a plain key', SECRET],
    ['azure', 'an api key and version', json({ api_key: SECRET, api_version: '2025-04-01-preview' })],
    ['azure', 'an Entra ID token', json({ entra_token: SECRET })],
    ['azure', 'a service principal', json({ tenant_id: 't', client_id: 'c', client_secret: SECRET })],
    ['bedrock', 'an access key', json(bedrockKey)],
    ['bedrock', "the worker's credentials", json({ region: 'us-east-1', credentials: 'environment' })],
    ['vertex', "a service account's JSON key", json(serviceAccount)],
  ] as const)('is taken at create and at update (%s: %s)', async ([type, _case, key], { stack }) => {
    const made = await create(stack, type, key);
    expect(made.status).toBe(200);
    expect(made.body.data).toMatchObject({ type });
    expect(JSON.stringify(made.body)).not.toContain(SECRET);
    const updated = await stack.admin('PUT', '/api/channel/', { id: made.body.data.id, key, weight: 2 });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ id: made.body.data.id, weight: 2 });
  });
});
