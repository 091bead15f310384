/**
 * bull-board's page as the gateway serves it: nothing on it comes from another origin. Its
 * template links Google's web fonts (IBM Plex), which every browser that opened the board fetched
 * from the internet: failing offline and under a strict CSP, and telling a third party who looks.
 * Such links are left out (the board's CSS falls back to the system's sans-serif and monospace
 * fonts), and a Content-Security-Policy forbids every other origin, for whatever a later version
 * of the board adds.
 */
import type { onSendHookHandler } from 'fastify';

export const BOARD_PAGE_CSP = [
  "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:", "font-src 'self'",
  "connect-src 'self'", "manifest-src 'self'", "base-uri 'self'", "form-action 'self'", "frame-ancestors 'none'",
].join('; ');

/** `https://…`, `//…`: an address on another origin (the board's own are relative to its `<base>`). */
const OUTSIDE = String.raw`["']?(?:[a-z][a-z0-9+.-]*:)?//`;
const OUTSIDE_LINK = new RegExp(String.raw`<link\b[^>]*\bhref\s*=\s*${OUTSIDE}[^>]*>`, 'gi');
const OUTSIDE_SCRIPT = new RegExp(String.raw`<script\b[^>]*\bsrc\s*=\s*${OUTSIDE}[^>]*>\s*</script>`, 'gi');

/** The page without its links and scripts from other origins. */
export function withoutOutsideFetches(html: string): string {
  return html.replace(OUTSIDE_LINK, '').replace(OUTSIDE_SCRIPT, '');
}

/** For the board's routes: its HTML pages (those without a policy of their own) made so, with the policy. */
export const boardPageHook: onSendHookHandler = async (_request, reply, payload) => {
  if (!String(reply.getHeader('content-type') ?? '').startsWith('text/html') || reply.hasHeader('content-security-policy')) return payload;
  reply.header('content-security-policy', BOARD_PAGE_CSP);
  return typeof payload === 'string' ? withoutOutsideFetches(payload) : payload;
};
