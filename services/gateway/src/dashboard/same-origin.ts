/**
 * The dashboard's defence against cross-site request forgery: a request that changes something
 * (signs in, signs out, retries or removes jobs) with the browser's session cookie must come
 * from a page of the dashboard itself. Browsers name the page's origin in `Origin` on every
 * such request (and in `Referer`, which the check falls back to); another site cannot forge
 * either. The host they name must be the one the request was sent to (`Host`, or the proxy's
 * `X-Forwarded-Host` under TRUST_PROXY), and their scheme one its pages may have (PAGE_SCHEMES). Without either header the request is refused too:
 * a browser always sends one, and a script has the API's access tokens instead.
 */
import type { FastifyRequest } from 'fastify';
import { ownValue } from '@gateway/contracts';

/** `host:port` with the scheme's default port dropped, in lower case. */
function bareHost(host: string, scheme?: string): string {
  const lower = host.toLowerCase();
  if ((scheme === 'http:' || scheme === undefined) && lower.endsWith(':80')) return lower.slice(0, -3);
  if ((scheme === 'https:' || scheme === undefined) && lower.endsWith(':443')) return lower.slice(0, -4);
  return lower;
}

/**
 * The schemes a page of the dashboard may have, by the scheme the request came by. Over HTTPS
 * (as the proxy says under TRUST_PROXY), only https: a plain-HTTP page on the same host is
 * another origin. Over HTTP, https too: the gateway cannot tell a TLS proxy it was not told of
 * (TRUST_PROXY) from none. Never another scheme (ws:, an extension's).
 */
const PAGE_SCHEMES: Record<string, ReadonlySet<string>> = { https: new Set(['https:']), http: new Set(['http:', 'https:']) };

/** The scheme the request came over: a proxy's X-Forwarded-Proto (TRUST_PROXY) comes as it was sent (`HTTPS`, or a scheme no page has). */
export const requestScheme = (request: FastifyRequest) => request.protocol.toLowerCase();

/** Why this request may not change anything from a browser session, or undefined when it may. */
export function crossOriginProblem(request: FastifyRequest): string | undefined {
  const source = request.headers.origin ?? request.headers.referer;
  if (!source || source === 'null') return 'a change through the dashboard must come from its own pages (no Origin or Referer header was sent)';
  let from: URL;
  try {
    from = new URL(source);
  } catch {
    return 'a change through the dashboard must come from its own pages (the Origin header is not a URL)';
  }
  if (!ownValue(PAGE_SCHEMES, requestScheme(request))?.has(from.protocol) || bareHost(from.host, from.protocol) !== bareHost(request.host)) return `a change through the dashboard must come from its own pages, not from ${from.origin}`;
  return undefined;
}
