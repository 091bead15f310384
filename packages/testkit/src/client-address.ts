import { Agent, request } from 'undici';
import type { HttpAnswer } from './http-client.ts';

/** An HTTP client whose connections leave from one local address. */
export interface AddressedClient {
  readonly address: string;
  postJson(url: string, body: unknown, headers?: Record<string, string>): Promise<HttpAnswer>;
  close(): Promise<void>;
}

/**
 * A client at `address`, any of 127.0.0.0/8 (Linux answers the whole block on its loopback), so
 * a test can be several clients at once to a gateway that counts per client address.
 */
export function clientAt(address: string): AddressedClient {
  const agent = new Agent({ localAddress: address, connections: 64 });
  return {
    address,
    async postJson(url, body, headers = {}) {
      const answer = await request(url, {
        method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
      });
      const text = await answer.body.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const headerList = Object.entries(answer.headers).flatMap(([name, value]) => (Array.isArray(value) ? value : [value ?? '']).map((v) => [name, v] as [string, string]));
      return { status: answer.statusCode, headers: new Headers(headerList), text, json };
    },
    close: () => agent.close(),
  };
}
