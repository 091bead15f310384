// The console's Spend view: what each key, user and model spent over the current UTC day and
// month (/admin/api/spend), and the price table the workers price requests with, where each
// price came from, and the models channels serve at no price (/admin/api/prices).
import { useEffect, useState } from 'preact/hooks';
import { locale } from './locale.js';
import { api, html, number, usd } from './views.js';

const SOURCE_LABEL = { channel: "channel's own", set: 'set', ratio: "new-api's ratios", default: 'default table' };
const utcDay = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 10);
const utcMonth = (seconds) => new Date(seconds * 1000).toISOString().slice(0, 7);
// A price per million tokens: cents at least, and down to a hundredth of a cent ($0.005, $0.0375).
const perMillion = new Intl.NumberFormat(locale, { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 4 });
const rate = (value) => perMillion.format(value);

export function Spend({ base }) {
  const [spend, setSpend] = useState(undefined);
  const [prices, setPrices] = useState(undefined);
  const [error, setError] = useState(undefined);
  const load = async () => {
    setError(undefined);
    // Each part on its own: the prices answer without PostgreSQL, the spend does not.
    await Promise.all([
      api(base, '/spend').then(setSpend, (e) => setError(e.message)),
      api(base, '/prices').then(setPrices, (e) => setError(e.message)),
    ]);
  };
  useEffect(() => { load(); }, []);
  return html`
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section id="spend"><h2>Spend${spend ? ` · ${utcDay(spend.day_start)} and ${utcMonth(spend.month_start)} (UTC)` : ''}</h2>
      <p class="updated"><button onClick=${load}>Refresh</button> Cost at each request's price when it was answered; a request of a model with no price costs nothing and is counted as not priced.</p>
      ${spend ? html`
        <${SpendTable} id="spend-keys" title="Keys" lines=${spend.keys} label=${(l) => (l.name ? `${l.name} (#${l.key})` : `#${l.key}`)} />
        <${SpendTable} id="spend-users" title="Users" lines=${spend.users} label=${(l) => `#${l.key}`} />
        <${SpendTable} id="spend-models" title="Models" lines=${spend.models} label=${(l) => l.key} />`
      : !error && html`<p class="loading">Loading…</p>`}
    </section>
    ${prices && html`<${Prices} prices=${prices} />`}`;
}

function SpendTable({ id, title, lines, label }) {
  return html`<h3>${title}</h3>
    ${lines.length === 0 ? html`<p>No requests this month.</p>` : html`
    <table id=${id}><thead><tr><th>${title.slice(0, -1)}</th><th>Today</th><th>Requests today</th><th>This month</th><th>Requests this month</th><th title="requests of the month answered at no price">Not priced</th></tr></thead>
    <tbody>${lines.map((l) => html`<tr data-key=${l.key}>
      <th scope="row">${label(l)}</th><td class="day">${usd(l.day)}</td><td>${number(l.day_requests)}</td>
      <td class="month">${usd(l.month)}</td><td>${number(l.month_requests)}</td><td class="unpriced">${number(l.unpriced)}</td>
    </tr>`)}</tbody></table>`}`;
}

function Prices({ prices }) {
  const groups = Object.entries(prices.group_ratios).filter(([, ratio]) => ratio !== 1);
  return html`<section id="prices"><h2>Prices (USD per million tokens)</h2>
    <p class="updated">The default table's list prices as read on ${prices.defaults_date}.
      ${groups.length > 0 && ` Group ratios over every price: ${groups.map(([group, ratio]) => `${group} × ${ratio}`).join(', ')}.`}</p>
    <table id="price-table"><thead><tr><th>Model</th><th>Channel</th><th>Input</th><th>Output</th><th>Cached input</th><th>Cache write</th><th>From</th></tr></thead>
    <tbody>
      ${prices.not_priced.map((p) => html`<tr class="not-priced" data-model=${p.model}>
        <th scope="row">${p.model}</th><td>${p.channel_ids.join(', ')}</td><td colspan="4">not priced: its requests cost nothing</td><td class="source">none</td></tr>`)}
      ${prices.items.map((p) => html`<tr data-model=${p.model} data-channel=${p.channel_id}>
        <th scope="row">${p.model}</th><td>${p.channel_id ?? 'any'}</td><td>${rate(p.input)}</td><td>${rate(p.output)}</td>
        <td>${rate(p.cached_input ?? p.input)}</td><td>${rate(p.cache_write ?? p.input)}</td><td class="source">${SOURCE_LABEL[p.source]}</td></tr>`)}
    </tbody></table></section>`;
}
