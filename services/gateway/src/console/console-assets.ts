/**
 * The operations console's files, served as they are: its own browser modules (console/web/),
 * and the libraries it is built on, straight from their npm packages. No build step, at install
 * or at run time: the browser loads ES modules, and an import map names the libraries.
 *
 * - Preact (MIT, 12 KB) and its hooks (4 KB): the page's components;
 * - htm (Apache-2.0, 1 KB): JSX-like templates in plain JavaScript;
 * - uPlot (MIT, 145 KB, 2 KB of CSS): the charts.
 *
 * Everything is read once at start-up; the page's Content-Security-Policy lets it run its own
 * scripts and the import map (by its hash), and nothing from anywhere else.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const WEB = join(import.meta.dirname, 'web');

interface Asset {
  type: string;
  body: Buffer;
  /** A digest of the body, for ETag and cache busting. */
  etag: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

function asset(path: string, type: string): Asset {
  const body = readFileSync(path);
  return { type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
}

/** Every file the console's page may load, by the name it is served under (`/admin/assets/<name>`). */
export function loadConsoleAssets(): Map<string, Asset> {
  return new Map([
    ['preact.js', asset(require.resolve('preact'), JS)],
    ['preact-hooks.js', asset(require.resolve('preact/hooks'), JS)],
    ['htm.js', asset(join(dirname(require.resolve('htm')), 'htm.mjs'), JS)],
    ['uplot.js', asset(require.resolve('uplot/dist/uPlot.esm.js'), JS)],
    ['uplot.css', asset(require.resolve('uplot/dist/uPlot.min.css'), CSS)],
    ['console.js', asset(join(WEB, 'console.js'), JS)],
    ['locale.js', asset(join(WEB, 'locale.js'), JS)],
    ['startup-failure.js', asset(join(WEB, 'startup-failure.js'), JS)],
    ['views.js', asset(join(WEB, 'views.js'), JS)],
    ['charts.js', asset(join(WEB, 'charts.js'), JS)],
    ['spend.js', asset(join(WEB, 'spend.js'), JS)],
    ['console.css', asset(join(WEB, 'console.css'), CSS)],
  ]);
}

/** The page: a shell that loads the console's module; the import map names the libraries. */
export function consolePage(base: string): { html: string; headers: Record<string, string> } {
  const importMap = JSON.stringify({
    imports: {
      preact: `${base}/assets/preact.js`,
      'preact/hooks': `${base}/assets/preact-hooks.js`,
      htm: `${base}/assets/htm.js`,
      uplot: `${base}/assets/uplot.js`,
    },
  });
  const mapHash = createHash('sha256').update(importMap).digest('base64');
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Operations · AI gateway</title>
<link rel="stylesheet" href="${base}/assets/uplot.css"><link rel="stylesheet" href="${base}/assets/console.css">
<script type="importmap">${importMap}</script>
<script type="module" src="${base}/assets/console.js"></script>
</head><body><div id="console" data-base="${base}"><p class="loading">Loading…</p></div></body></html>`;
  return {
    html,
    headers: {
      'content-security-policy': `default-src 'none'; script-src 'self' 'sha256-${mapHash}'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
    },
  };
}
