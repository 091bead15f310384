/**
 * undici's connector, behind the address policy: every address the host resolves to is checked
 * with the port it connects to (the gateway's own Redis is refused by address and port), and an
 * address written in the URL, which is never looked up, is checked before connecting. One
 * connector per port, each with the lookup for its port.
 */
import { isIP } from 'node:net';
import { buildConnector } from 'undici';
import { addressProblem, policedLookup, type AddressPolicy } from './upstream-address-policy.ts';

export function policedConnector(policy: () => AddressPolicy, timeoutMs = 10_000): buildConnector.connector {
  const connectors = new Map<number, buildConnector.connector>();
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === 'https:' ? 443 : 80);
    if (isIP(options.hostname.replace(/^\[|\]$/g, ''))) {
      const problem = addressProblem(options.hostname, port, policy());
      if (problem) return callback(Object.assign(new Error(`upstream address refused: ${problem}`), { code: 'EUPSTREAMFORBIDDEN' }), null);
    }
    let connect = connectors.get(port);
    if (!connect) connectors.set(port, (connect = buildConnector({ timeout: timeoutMs, lookup: policedLookup(policy, port) })));
    return connect(options, callback);
  };
}
