/**
 * A service principal's access tokens against a mock Microsoft Entra ID over real HTTP: one
 * client-credentials grant shared by requests at once, the token held while it is fresh and
 * fetched again before it expires, dropped on demand, and a refused grant the channel's 401
 * naming Entra's code alone (never the secret), never held.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { UpstreamError } from '@gateway/contracts';
import { newServicePrincipal, startMockAzureUpstream, type MockAzureUpstream } from '@gateway/testkit';
import { azureCredential, type ServicePrincipal } from './credential.ts';
import { dropEntraToken, entraTokenFor } from './entra-tokens.ts';

let mock: MockAzureUpstream;
// One principal a test: the tokens held are the process's, by principal.
const principals = Array.from({ length: 4 }, () => newServicePrincipal());

beforeAll(async () => {
  mock = await startMockAzureUpstream({ principals });
});
afterAll(() => mock.close());

const principalOf = (key: string): ServicePrincipal => {
  const credential = azureCredential(key);
  if (!('servicePrincipal' in credential)) throw new Error('not a service principal');
  return credential.servicePrincipal;
};
const failureOf = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('expected a failure'), (error: unknown) => error as UpstreamError);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a service principal's Entra ID tokens", () => {
  it('are asked for once by requests at once, and held while fresh', async () => {
    const principal = principalOf(mock.credential(principals[0]));
    const asked = mock.entra.tokenRequests;
    const tokens = await Promise.all(Array.from({ length: 5 }, () => entraTokenFor(principal)));
    expect(await entraTokenFor(principal)).toBe(tokens[0]);
    expect(new Set(tokens).size).toBe(1);
    expect(mock.entra.tokenRequests - asked).toBe(1);
    expect(mock.entra.accepts(tokens[0]!)).toBe(true);
  });

  it('are fetched again past half a short life, while the last one still holds', async () => {
    const shortLived = await startMockAzureUpstream({ tokenLifetimeSeconds: 2 });
    try {
      const principal = principalOf(shortLived.credential());
      const first = await entraTokenFor(principal);
      await sleep(1100);
      const second = await entraTokenFor(principal);
      expect(second).not.toBe(first);
      expect(shortLived.entra.issued.map((issued) => issued.token)).toEqual([first, second]);
      // Refreshed before it expired: the first is still good when the second is fetched.
      expect(shortLived.entra.accepts(first)).toBe(true);
      expect(await entraTokenFor(principal)).toBe(second);
    } finally {
      await shortLived.close();
    }
  });

  it('are fetched again once dropped (Azure refused the one held)', async () => {
    const principal = principalOf(mock.credential(principals[1]));
    const first = await entraTokenFor(principal);
    mock.entra.revoke(first);
    dropEntraToken(principal);
    const second = await entraTokenFor(principal);
    expect(second).not.toBe(first);
    expect(mock.entra.accepts(second)).toBe(true);
  });

  it("is the channel's 401 naming Entra's error for a wrong secret or tenant, never holding the refusal nor showing the secret", async () => {
    const wrong = JSON.parse(mock.credential(principals[2])) as Record<string, string>;
    wrong.client_secret = 'not-the-secret-0123456789abcdef';
    const principal = principalOf(JSON.stringify(wrong));
    const asked = mock.entra.tokenRequests;
    for (let i = 0; i < 2; i++) {
      const refused = await failureOf(entraTokenFor(principal));
      expect([refused.kind, refused.status, refused.message]).toEqual(['http', 401, "Microsoft Entra ID refused the service principal's token request (invalid_client, AADSTS7000215)"]);
      expect(JSON.stringify({ ...refused, message: refused.message })).not.toContain(wrong.client_secret);
    }
    expect(mock.entra.tokenRequests - asked).toBe(2);
    const elsewhere = principalOf(mock.credential(principals[2], { tenant_id: 'no-such-tenant' }));
    expect((await failureOf(entraTokenFor(elsewhere))).message).toBe("Microsoft Entra ID refused the service principal's token request (invalid_request, AADSTS90002)");
  });

  it('is a connection failure when the authority cannot be reached', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = server.address() as { port: number };
        server.close(() => resolve(free));
      });
    });
    const principal = principalOf(mock.credential(principals[3], { authority_host: `http://127.0.0.1:${port}` }));
    expect(await failureOf(entraTokenFor(principal))).toMatchObject({ kind: 'connection', message: "the service principal's token request failed: ECONNREFUSED" });
  });
});
