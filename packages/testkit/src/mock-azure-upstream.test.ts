/**
 * The mock Azure OpenAI resource and the Entra ID token endpoint beside it, driven over HTTP as a
 * client would: the client-credentials grant as Microsoft documents it, refusals in Entra's error
 * JSON, and the resource taking only the live tokens Entra issued.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { COGNITIVE_SERVICES_SCOPE } from './mock-entra-id.ts';
import { startMockAzureUpstream, type MockAzureUpstream } from './mock-azure-upstream.ts';

let mock: MockAzureUpstream;

beforeAll(async () => {
  mock = await startMockAzureUpstream();
});
afterAll(() => mock.close());
beforeEach(() => mock.reset());

const FORM = 'application/x-www-form-urlencoded';

async function askToken(fields: Record<string, string> = {}, tenant = mock.principal.tenantId, contentType = FORM) {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: mock.principal.clientId, client_secret: mock.principal.clientSecret, scope: COGNITIVE_SERVICES_SCOPE, ...fields });
  const response = await fetch(`${mock.url}/${tenant}/oauth2/v2.0/token`, { method: 'POST', headers: { 'content-type': contentType }, body: form.toString() });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function chat(headers: Record<string, string>) {
  const response = await fetch(`${mock.url}/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
}

describe("the mock Entra ID token endpoint", () => {
  it('grants a client-credentials request a bearer token of the life the test set', async () => {
    mock.entra.expiresInSeconds = 42;
    const granted = await askToken();
    mock.entra.expiresInSeconds = 3599;
    expect(granted).toEqual({ status: 200, body: { token_type: 'Bearer', expires_in: 42, ext_expires_in: 42, access_token: mock.entra.issued.at(-1)!.token } });
    expect(String(granted.body.access_token).split('.')).toHaveLength(3);
    expect(mock.entra.issued.at(-1)!.expiresAt - Date.now()).toBeGreaterThan(40_000);
    expect(mock.requests).toHaveLength(0);
  });

  it("refuses a wrong secret 401 invalid_client, and a wrong grant, tenant, application, scope or body 400, in Entra's error JSON", async () => {
    const issued = mock.entra.issued.length;
    const wrongSecret = await askToken({ client_secret: 'nope' });
    expect(wrongSecret).toMatchObject({
      status: 401,
      body: { error: 'invalid_client', error_description: expect.stringMatching(/^AADSTS7000215: Invalid client secret provided\./), error_codes: [7000215], trace_id: expect.any(String), correlation_id: expect.any(String), timestamp: expect.any(String) },
    });
    expect(JSON.stringify(wrongSecret.body)).not.toContain('nope');
    const refusals = [
      await askToken({ grant_type: 'password' }),
      await askToken({}, 'another-tenant'),
      await askToken({ client_id: 'another-app' }),
      await askToken({ scope: 'https://cognitiveservices.azure.com' }),
      await askToken({}, mock.principal.tenantId, 'application/json'),
    ];
    expect(refusals.map(({ status, body }) => [status, body.error, (body.error_codes as number[])[0]])).toEqual([
      [400, 'unsupported_grant_type', 70003], [400, 'invalid_request', 90002], [400, 'unauthorized_client', 700016], [400, 'invalid_scope', 1002012], [400, 'invalid_request', 900144],
    ]);
    expect(mock.entra.issued).toHaveLength(issued);
  });
});

describe('the mock Azure OpenAI resource', () => {
  it('answers a live token Entra issued, and refuses one expired, revoked or never issued 401 as Azure does', async () => {
    const token = String((await askToken()).body.access_token);
    expect((await chat({ authorization: `Bearer ${token}` })).status).toBe(200);
    for (const refused of [
      await chat({ authorization: 'Bearer eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.made-up.token' }),
      await (async () => { mock.entra.issued.at(-1)!.expiresAt = Date.now() - 1; return chat({ authorization: `Bearer ${token}` }); })(),
    ]) expect(refused).toEqual({ status: 401, body: { error: { code: '401', message: expect.stringMatching(/^Unauthorized\. Access token is missing, invalid/) } } });
    const another = String((await askToken()).body.access_token);
    mock.entra.revoke(another);
    expect((await chat({ authorization: `Bearer ${another}` })).status).toBe(401);
    expect((await chat({ 'api-key': mock.apiKey })).status).toBe(200);
    expect((await chat({ 'api-key': 'wrong' })).body.error!.message).toMatch(/^Access denied due to invalid subscription key/);
  });
});
