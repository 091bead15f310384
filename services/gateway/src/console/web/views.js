// The console's views: the live overview (queues, channels, batches) and the request log's search
// (the Spend view is spend.js).
import { h } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { locale } from './locale.js';

export const html = htm.bind(h);

/** One of the console's calls; new-api's envelope unwrapped, or an Error with its message. */
export async function api(base, path, { method = 'GET', body } = {}) {
  const response = await fetch(`${base}/api${path}`, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({ success: false, message: `${response.status} ${response.statusText}` }));
  if (response.status === 401) location.assign(`${base}/login`);
  if (!response.ok || answer.success === false) throw new Error(answer.message || `${response.status}`);
  return answer.data;
}

export const OVERVIEW_EVERY_MS = 2000;

/** The overview, read every OVERVIEW_EVERY_MS while `live`; its history (for the live chart) kept in memory. */
export function useOverview(base, live) {
  const [state, setState] = useState({ data: undefined, error: undefined, history: [] });
  const refresh = useCallback(async () => {
    try {
      const data = await api(base, '/overview');
      setState((s) => ({ data, error: undefined, history: [...s.history.slice(-299), data] }));
    } catch (error) {
      setState((s) => ({ ...s, error: error.message }));
    }
  }, [base]);
  useEffect(() => {
    if (!live) return undefined;
    refresh();
    const timer = setInterval(refresh, OVERVIEW_EVERY_MS);
    return () => clearInterval(timer);
  }, [live, refresh]);
  return { ...state, refresh };
}

// Times in the browser's time zone, written the same everywhere; numbers in the browser's
// language, or a usable one when Intl refuses the browser's (locale.js).
const two = (n) => String(n).padStart(2, '0');
const time = (ms) => { const d = new Date(ms); return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`; };
const dateTime = (seconds) => { const d = new Date(seconds * 1000); return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${time(d.getTime())}`; };
const thousands = new Intl.NumberFormat(locale);
export const number = (n) => thousands.format(n ?? 0);
// Dollars: cents at a dollar and above; below, three significant digits, so that a request of a
// cheap model ($0.0000045) does not show as $0.00.
const dollars = new Intl.NumberFormat(locale, { style: 'currency', currency: 'USD' });
const cents = new Intl.NumberFormat(locale, { style: 'currency', currency: 'USD', maximumSignificantDigits: 3 });
export const usd = (n) => ((n ?? 0) >= 1 || n === 0 ? dollars : cents).format(n ?? 0);
/** A row's cost, or why it has none. */
const costOf = (row) => (row.priced ? usd(row.cost) : row.status < 400 ? 'not priced' : '–');
const ms = (n) => (n === null || n === undefined ? '–' : n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(1)} s`);

export function Overview({ base, state }) {
  const { data, error, refresh } = state;
  if (!data) return html`<p class=${error ? 'error' : 'loading'} role=${error ? 'alert' : undefined}>${error ?? 'Loading…'}</p>`;
  return html`
    ${error && html`<p class="error" role="alert">Not refreshed: ${error}</p>`}
    <p class="updated">Live, every ${OVERVIEW_EVERY_MS / 1000} s · last read ${time(data.at)}</p>
    ${data.log_unavailable && html`<p class="warning">${data.log_unavailable}</p>`}
    <${Queues} queues=${data.queues} />
    <${Channels} base=${base} channels=${data.channels} refresh=${refresh} />
    <${Batches} batches=${data.batches} />`;
}

function Queues({ queues }) {
  return html`<section id="queues"><h2>Queues</h2>
    <table><thead><tr><th>Queue</th><th>Waiting</th><th>Active</th><th>Delayed</th><th>Finished / s</th><th>Wait estimate</th><th>Worker processes</th></tr></thead>
    <tbody>${queues.map((q) => {
      const sum = (field) => q.shards.reduce((total, shard) => total + shard[field], 0);
      const sharded = q.shards.length > 1;
      return html`
        <tr data-queue=${q.queue}>
          <th scope="row">${q.queue}${sharded ? ` (${q.shards.length} shards)` : ''}</th>
          <td class="waiting">${number(sum('waiting') + sum('prioritized'))}</td><td class="active">${number(sum('active'))}</td><td>${number(sum('delayed'))}</td>
          <td class="drain">${q.drain_per_second.toFixed(1)}</td>
          <td>${q.backlog === 0 ? 'none waiting' : q.wait_estimate_ms === null ? 'not draining' : ms(q.wait_estimate_ms)}</td>
          <td class="workers">${q.processes.length === 0 ? html`<span class="bad">none</span>`
            : q.processes.map((p) => html`<span class="process" title=${`${p.lanes} lane(s)`}>${p.process} × ${p.concurrency}</span>`)}</td>
        </tr>
        ${sharded && q.shards.map((s) => html`<tr class="shard"><td>shard ${s.shard}</td><td>${number(s.waiting + s.prioritized)}</td><td>${number(s.active)}</td><td>${number(s.delayed)}</td><td colspan="3"></td></tr>`)}`;
    })}</tbody></table></section>`;
}

const CONDITION_LABEL = { enabled: 'enabled', cooling_down: 'cooling down', disabled: 'disabled', auto_disabled: 'auto-disabled' };

function ChannelState({ channel }) {
  const label = CONDITION_LABEL[channel.condition];
  return html`<span class=${`badge ${channel.condition}`}>${label}</span>
    ${channel.condition === 'cooling_down' && html` until ${time(channel.cooling_until)}`}
    ${channel.status_reason && channel.condition !== 'enabled' && html`<div class="reason">${channel.status_reason}</div>`}`;
}

function InFlight({ channel }) {
  if (!channel.max_concurrency) return html`<span title="no max_concurrency: not counted">unlimited</span>`;
  const share = Math.min(1, channel.in_flight / channel.max_concurrency);
  return html`<span class="slots">${channel.in_flight} / ${channel.max_concurrency}</span>
    <span class=${`meter${share >= 1 ? ' full' : ''}`} role="meter" aria-valuenow=${channel.in_flight} aria-valuemin="0" aria-valuemax=${channel.max_concurrency}><span style=${`width:${share * 100}%`}></span></span>`;
}

function Channels({ base, channels, refresh }) {
  const [message, setMessage] = useState(undefined);
  const [tag, setTag] = useState('');
  const act = async (what, path, body) => {
    setMessage({ text: `${what}…` });
    try {
      await api(base, path, { method: path === '/channel/' ? 'PUT' : 'POST', body });
      setMessage({ text: `${what}: done` });
      await refresh();
    } catch (error) {
      setMessage({ text: `${what}: ${error.message}`, error: true });
    }
  };
  const tags = [...new Set(channels.map((c) => c.tag).filter(Boolean))].sort();
  return html`<section id="channels"><h2>Channels</h2>
    <table><thead><tr><th>ID</th><th>Name</th><th>Tag</th><th>State</th><th>In flight</th><th>Calls (5 min)</th><th>Errors</th><th>429s</th><th>p50</th><th>p99</th><th></th></tr></thead>
    <tbody>${channels.map((c) => html`
      <tr data-channel=${c.id}>
        <td>${c.id}</td><th scope="row">${c.name}</th><td>${c.tag}</td>
        <td class="state"><${ChannelState} channel=${c} /></td>
        <td class="in-flight"><${InFlight} channel=${c} /></td>
        <td class="calls">${c.recent ? number(c.recent.calls) : '–'}</td>
        <td class=${`errors${c.recent?.errors ? ' bad' : ''}`}>${c.recent ? number(c.recent.errors) : '–'}</td>
        <td class="rate-limited">${c.recent ? number(c.recent.rate_limited) : '–'}</td>
        <td>${c.recent?.calls ? ms(c.recent.p50_ms) : '–'}</td><td>${c.recent?.calls ? ms(c.recent.p99_ms) : '–'}</td>
        <td>${c.condition === 'disabled' || c.condition === 'auto_disabled'
          ? html`<button onClick=${() => act(`Enable channel ${c.name}`, '/channel/', { id: c.id, status: 1 })}>Enable</button>`
          : html`<button onClick=${() => act(`Disable channel ${c.name}`, '/channel/', { id: c.id, status: 2 })}>Disable</button>`}</td>
      </tr>`)}</tbody></table>
    <form class="tag-action" onSubmit=${(e) => e.preventDefault()}>
      <label for="tag">Every channel of tag</label>
      <input id="tag" list="tags" value=${tag} onInput=${(e) => setTag(e.currentTarget.value)} required />
      <datalist id="tags">${tags.map((t) => html`<option value=${t} />`)}</datalist>
      <button type="button" disabled=${!tag} onClick=${() => act(`Disable tag ${tag}`, '/channel/tag/disabled', { tag })}>Disable tag</button>
      <button type="button" disabled=${!tag} onClick=${() => act(`Enable tag ${tag}`, '/channel/tag/enabled', { tag })}>Enable tag</button>
    </form>
    ${message && html`<p class=${message.error ? 'error' : 'done'} role="status">${message.text}</p>`}
  </section>`;
}

function Batches({ batches }) {
  if (!batches) return null;
  return html`<section id="batches"><h2>Batches in progress (${number(batches.total)})</h2>
    ${batches.items.length === 0 ? html`<p>None.</p>` : html`
    <table><thead><tr><th>Batch</th><th>User</th><th>Endpoint</th><th>Status</th><th>Completed</th><th>Failed</th><th>Total</th><th>Created</th></tr></thead>
    <tbody>${batches.items.map((b) => html`<tr>
      <td><code>${b.id}</code></td><td>${b.username ?? `#${b.user_id}`}</td><td>${b.endpoint}</td><td>${b.status}</td>
      <td>${number(b.request_counts.completed)}</td><td>${number(b.request_counts.failed)}</td><td>${number(b.request_counts.total)}</td><td>${dateTime(b.created_at)}</td>
    </tr>`)}</tbody></table>`}</section>`;
}

/** The request log's filters, as the form holds them: every one a string ('' = unset). */
const FILTERS = [
  ['request_id', 'Request id', 'text'],
  ['user_id', 'User id', 'number'],
  ['token_id', 'Key id', 'number'],
  ['model_name', 'Model', 'text'],
  ['channel', 'Channel id', 'number'],
  ['status', 'Status', 'number'],
  ['from', 'From', 'datetime-local'],
  ['to', 'To', 'datetime-local'],
];
const PAGE_SIZE = 50;

function queryOf(filters, page) {
  const query = new URLSearchParams({ p: String(page), page_size: String(PAGE_SIZE) });
  for (const [name] of FILTERS) {
    const value = filters[name]?.trim();
    if (!value) continue;
    if (name === 'from') query.set('start_timestamp', String(Math.floor(new Date(value).getTime() / 1000)));
    else if (name === 'to') query.set('end_timestamp', String(Math.floor(new Date(value).getTime() / 1000)));
    else query.set(name, value);
  }
  if (filters.failed) query.set('failed', 'true');
  return query;
}

/** `datetime-local`'s value for a moment, in the browser's time zone. */
const localInput = (ms) => { const d = new Date(ms); return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`; };

export function LogSearch({ base }) {
  // The last day by default: a search of every retained day is asked for, not made on opening.
  const [filters, setFilters] = useState(() => ({ from: localInput(Date.now() - 86_400_000) }));
  const [page, setPage] = useState(1);
  const [result, setResult] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [open, setOpen] = useState(undefined);
  const search = async (p = 1) => {
    setError(undefined);
    try {
      setResult(await api(base, `/log?${queryOf(filters, p)}`));
      setPage(p);
    } catch (e) {
      setError(e.message);
    }
  };
  useEffect(() => { search(1); }, []);
  const set = (name) => (e) => setFilters({ ...filters, [name]: e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value });
  const pages = result ? Math.max(1, Math.ceil(result.total / PAGE_SIZE)) : 1;
  return html`<section id="log"><h2>Request log</h2>
    <form class="filters" onSubmit=${(e) => { e.preventDefault(); setOpen(undefined); search(1); }}>
      ${FILTERS.map(([name, label, type]) => html`<label>${label}<input name=${name} type=${type} value=${filters[name] ?? ''} onInput=${set(name)} /></label>`)}
      <label class="check"><input name="failed" type="checkbox" checked=${!!filters.failed} onChange=${set('failed')} />failed only</label>
      <button type="submit">Search</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${result && html`
      <p>${number(result.total)} request(s)${result.total > PAGE_SIZE ? ` · page ${page} of ${pages}` : ''}
        ${page > 1 && html` <button onClick=${() => search(page - 1)}>Newer</button>`}
        ${page < pages && html` <button onClick=${() => search(page + 1)}>Older</button>`}</p>
      <table class="log"><thead><tr><th>Time</th><th>Request id</th><th>User</th><th>Key</th><th>Route</th><th>Model</th><th>Channel</th><th>Status</th><th title="requests the row counts: a refusal's repeats in its window">Count</th><th>Tokens</th><th>Cost</th><th>Total</th></tr></thead>
      <tbody>${result.items.map((row) => html`
        <tr class=${`entry${row.status >= 400 ? ' failed' : ''}${open?.job_id === row.job_id ? ' open' : ''}`} data-request=${row.request_id} tabindex="0"
          onClick=${() => setOpen(row)} onKeyDown=${(e) => e.key === 'Enter' && setOpen(row)}>
          <td>${dateTime(row.created_at)}</td><td><code>${row.request_id}</code></td><td>${row.user_id || '–'}</td><td>${row.token_name || (row.token_id ? `#${row.token_id}` : row.credential ?? '–')}</td>
          <td>${row.route}</td><td>${row.model}</td><td>${row.channel_id ?? '–'}</td><td class="status">${row.status}</td><td class="count">${number(row.count ?? 1)}</td><td>${number(row.total_tokens)}</td><td class="cost">${costOf(row)}</td><td>${ms(row.total_ms)}</td>
        </tr>`)}</tbody></table>`}
    ${open && html`<${LogEntry} entry=${open} close=${() => setOpen(undefined)} />`}
  </section>`;
}

const DETAIL_FIELDS = [
  ['request_id', 'Request id'], ['created_at', 'Arrived'], ['user_id', 'User'], ['token_id', 'Key id'], ['token_name', 'Key name'],
  ['route', 'Route'], ['model', 'Model'], ['upstream_model', 'Upstream model'], ['channel_id', 'Channel'], ['status', 'Status'],
  ['error_code', 'Error code'], ['error_message', 'Error'], ['priority', 'Priority'], ['batch_id', 'Batch'], ['streamed', 'Streamed'],
  ['prompt_tokens', 'Prompt tokens'], ['completion_tokens', 'Completion tokens'], ['total_tokens', 'Total tokens'],
  ['cache_read_tokens', 'Prompt cache read'], ['cache_write_tokens', 'Prompt cache written'], ['sticky', 'Conversation channel'], ['quota', 'Quota charged'], ['cost', 'Cost'],
  ['queue_ms', 'In the queue'], ['slot_ms', 'Waiting for a channel slot'], ['first_byte_ms', 'Upstream first byte'], ['upstream_ms', 'Upstream'], ['total_ms', 'Total'],
  ['count', 'Requests counted'], ['client_ip', 'Client address'], ['credential', 'Unknown key'], ['trace_id', 'Trace'],
  ['prompt', 'Prompt'], ['reply', 'Reply'],
];

function shown(name, value, entry) {
  if (name === 'created_at') return dateTime(value);
  if (name === 'cost') return costOf(entry);
  if (name.endsWith('_ms')) return ms(value);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

function LogEntry({ entry, close }) {
  const panel = useRef(null);
  useEffect(() => panel.current?.focus(), [entry]);
  return html`<aside class="entry-detail" aria-label="request" tabindex="-1" ref=${panel}>
    <button class="close" onClick=${close} aria-label="close">×</button>
    <h3>Request <code>${entry.request_id}</code></h3>
    <dl>${DETAIL_FIELDS.filter(([name]) => entry[name] !== undefined && entry[name] !== null).map(([name, label]) => html`<dt>${label}</dt><dd data-field=${name}>${shown(name, entry[name], entry)}</dd>`)}</dl>
    <h4>Channels tried</h4>
    ${entry.attempts.length === 0 ? html`<p>None: the request never reached a channel${entry.job_id.startsWith('refusal-') ? ': the gateway refused it' : ''}.</p>` : html`
    <table class="attempts"><thead><tr><th>#</th><th>Channel</th><th>Upstream model</th><th>Status</th><th>Why it was left</th><th>Host</th><th>Time</th></tr></thead>
    <tbody>${entry.attempts.map((a, i) => html`<tr><td>${i + 1}</td><td>${a.channel_id}</td><td>${a.upstream_model}</td><td>${a.status ?? '–'}</td><td>${a.status === 200 ? 'answered' : a.error === 'http' ? `answered ${a.status}` : a.error ?? ''}</td><td>${a.host ?? ''}</td><td>${ms(a.ms)}</td></tr>`)}</tbody></table>`}
  </aside>`;
}
