/**
 * The dashboard's batch page (`/admin/queues/batches`): every user's batches with their counts,
 * the running ones by default, as plain HTML that reloads itself every few seconds. No script
 * and no build step; everything shown is escaped, a batch's metadata (its owner's input) above
 * all, and the page's Content-Security-Policy lets nothing run or load even if something were not.
 */
import { z } from 'zod';
import { RUNNING_BATCH_STATUSES, type BatchStatus, type Page } from '@gateway/contracts';
import type { BatchOverviewItem } from '../batches/batch-overview.ts';
import { escapeHtml } from './html.ts';

export const BATCH_PAGE_REFRESH_SECONDS = 5;
const PAGE_SIZE = 50;

/** What the page's address asks for: running batches (default) or all, and which page. A bad value is the default. */
const pageQuery = z.object({
  show: z.enum(['running', 'all']).catch('running').default('running'),
  p: z.coerce.number().int().min(1).max(100_000).catch(1).default(1),
});
export type BatchPageView = z.infer<typeof pageQuery>;

export function batchPageView(query: unknown): BatchPageView {
  return pageQuery.parse(query ?? {});
}

/** The overview's query for a view. */
export function overviewQuery(view: BatchPageView): { p: number; page_size: number; status?: BatchStatus[] } {
  return { p: view.p, page_size: PAGE_SIZE, status: view.show === 'running' ? [...RUNNING_BATCH_STATUSES] : undefined };
}

/** Headers the page is sent with: nothing may run, load or frame it, and nothing of it is cached. */
export const BATCH_PAGE_HEADERS = {
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
} as const;

const STYLE = `body{font-family:system-ui,sans-serif;margin:1.5rem;color:#1f2328}
nav a{margin-right:1rem}table{border-collapse:collapse;width:100%;margin-top:1rem;font-size:.9rem}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #d0d7de;vertical-align:top}
.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.85rem}progress{width:8rem}
.muted{color:#656d76}.error{color:#b00020}`;

const time = (unixSeconds: number) => `${new Date(unixSeconds * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

function row(batch: BatchOverviewItem): string {
  const { total, completed, failed } = batch.request_counts;
  const done = completed + failed;
  const percent = total > 0 ? Math.floor((done / total) * 100) : 0;
  const owner = batch.username === null ? `#${batch.user_id}` : `${escapeHtml(batch.username)} <span class="muted">#${batch.user_id}</span>`;
  const metadata = Object.entries(batch.metadata ?? {}).map(([key, value]) => `${escapeHtml(key)}=${escapeHtml(value)}`).join('<br>');
  return `<tr data-batch="${escapeHtml(batch.id)}"><td><code>${escapeHtml(batch.id)}</code></td><td>${owner}</td><td>${escapeHtml(batch.status)}</td>
<td><progress max="${total}" value="${done}">${percent}%</progress> ${percent}%</td><td class="n">${total}</td><td class="n">${completed}</td><td class="n">${failed}</td>
<td>${time(batch.created_at)}</td><td>${metadata}</td></tr>`;
}

/** `base` is the dashboard's path (`/admin/queues`); the page is `${base}/batches`. */
function layout(base: string, title: string, body: string, refresh: boolean): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">${refresh ? `<meta http-equiv="refresh" content="${BATCH_PAGE_REFRESH_SECONDS}">` : ''}
<title>${escapeHtml(title)} · AI gateway</title><style>${STYLE}</style></head><body>
<nav><a href="${base}">Queues</a><a href="${base}/batches">Running batches</a><a href="${base}/batches?show=all">All batches</a></nav>
${body}</body></html>`;
}

/** The page for a page of batches. */
export function batchProgressPage(base: string, view: BatchPageView, page: Page<BatchOverviewItem>, now = Date.now()): string {
  const heading = view.show === 'running' ? 'Running batches' : 'All batches';
  const pages = Math.max(1, Math.ceil(page.total / page.page_size));
  const link = (p: number, text: string) => `<a href="${base}/batches?show=${view.show}&amp;p=${p}">${text}</a>`;
  const paging = [view.p > 1 ? link(view.p - 1, '← Newer') : '', view.p < pages ? link(view.p + 1, 'Older →') : ''].filter(Boolean).join(' ');
  const table = page.items.length === 0
    ? `<p>No ${view.show === 'running' ? 'running ' : ''}batches.</p>`
    : `<table><thead><tr><th>Batch</th><th>User</th><th>Status</th><th>Progress</th><th class="n">Total</th><th class="n">Completed</th><th class="n">Failed</th><th>Created</th><th>Metadata</th></tr></thead>
<tbody>${page.items.map(row).join('\n')}</tbody></table>`;
  return layout(base, heading, `<h1>${heading}</h1>
<p class="muted">${page.total} in all · page ${view.p} of ${pages} · as of ${time(Math.floor(now / 1000))}, refreshed every ${BATCH_PAGE_REFRESH_SECONDS} s</p>
${table}<p>${paging}</p>`, true);
}

/** The page when the batches cannot be read (no DATABASE_URL, PostgreSQL away). */
export function batchErrorPage(base: string, message: string): string {
  return layout(base, 'Batches', `<h1>Batches</h1><p class="error" role="alert">${escapeHtml(message)}</p>`, true);
}
