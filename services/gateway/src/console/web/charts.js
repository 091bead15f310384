// Charts over time: the queues live (from the overview the page polls) and the request log's
// throughput, errors, latency and tokens per route, model or channel over the last hour or day.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { api, html } from './views.js';

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];
const MOST_SERIES = COLOURS.length;
const RANGES = { hour: { seconds: 3600, interval: 'minute', step: 60 }, day: { seconds: 86_400, interval: 'hour', step: 3600 } };
const HISTORY_EVERY_MS = 30_000;

/** One uPlot chart, redrawn when its data changes and sized to its box. */
function Chart({ title, series, data, unit }) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current) return undefined;
    const plot = new uPlot({
      width: box.current.clientWidth || 560,
      height: 220,
      series: [{}, ...series.map((label, i) => ({ label, stroke: COLOURS[i % COLOURS.length], width: 1.5, points: { show: true, size: 4 } }))],
      axes: [{}, { label: unit, size: 60 }],
      scales: { x: { time: true } },
      legend: { live: false },
    }, data, box.current);
    return () => plot.destroy();
  }, [JSON.stringify(series), JSON.stringify(data)]);
  return html`<figure class="chart" aria-label=${title}><figcaption>${title}</figcaption><div ref=${box}></div></figure>`;
}

/** The live queues: jobs waiting and finished per second, one series per queue, since the page opened. */
function LiveQueues({ overview }) {
  const history = overview.history;
  if (history.length < 2) return html`<p class="loading">Collecting live samples…</p>`;
  const queues = history.at(-1).queues.map((q) => q.queue);
  const xs = history.map((o) => o.at / 1000);
  const waiting = queues.map((name) => history.map((o) => {
    const q = o.queues.find((x) => x.queue === name);
    return q ? q.shards.reduce((t, s) => t + s.waiting + s.prioritized, 0) : null;
  }));
  const drain = queues.map((name) => history.map((o) => o.queues.find((x) => x.queue === name)?.drain_per_second ?? null));
  return html`<div class="charts">
    <${Chart} title="Jobs waiting, live" series=${queues} data=${[xs, ...waiting]} unit="jobs" />
    <${Chart} title="Jobs finished per second, live" series=${queues} data=${[xs, ...drain]} unit="jobs/s" />
  </div>`;
}

/** Stat rows (bucket, key) as uPlot columns: every bucket of the range, the busiest keys as series. */
function pivot(rows, range, field) {
  const { seconds, step } = RANGES[range];
  const end = Math.floor(Date.now() / 1000 / step) * step;
  const xs = [];
  for (let t = end - seconds + step; t <= end; t += step) xs.push(t);
  const totals = new Map();
  for (const row of rows) totals.set(String(row.key), (totals.get(String(row.key)) ?? 0) + row.requests);
  const keys = [...totals.keys()].sort((a, b) => totals.get(b) - totals.get(a)).slice(0, MOST_SERIES);
  const columns = keys.map((key) => {
    const byBucket = new Map(rows.filter((r) => String(r.key) === key).map((r) => [r.bucket, r[field]]));
    return xs.map((x) => byBucket.get(x) ?? (field.endsWith('_ms') ? null : 0));
  });
  return { keys, data: [xs, ...columns] };
}

const GROUPS = [['route', 'route'], ['model', 'model'], ['channel', 'channel']];

function LogCharts({ base }) {
  const [range, setRange] = useState('hour');
  const [group, setGroup] = useState('route');
  const [rows, setRows] = useState(undefined);
  const [error, setError] = useState(undefined);
  useEffect(() => {
    let stop = false;
    const read = async () => {
      const { seconds, interval } = RANGES[range];
      const query = new URLSearchParams({ interval, group_by: group, start_timestamp: String(Math.floor(Date.now() / 1000) - seconds) });
      try {
        const answer = await api(base, `/log/stat?${query}`);
        if (!stop) { setRows(answer); setError(undefined); }
      } catch (e) {
        if (!stop) setError(e.message);
      }
    };
    read();
    const timer = setInterval(read, HISTORY_EVERY_MS);
    return () => { stop = true; clearInterval(timer); };
  }, [base, range, group]);
  const per = range === 'hour' ? 'minute' : 'hour';
  const chart = (title, field, unit) => {
    const { keys, data } = pivot(rows, range, field);
    return html`<${Chart} title=${title} series=${keys.map((k) => (group === 'channel' && k !== 'null' ? `channel ${k}` : k === 'null' ? 'no channel' : k))} data=${data} unit=${unit} />`;
  };
  return html`<section id="history"><h2>From the request log</h2>
    <form class="chart-options" onSubmit=${(e) => e.preventDefault()}>
      <label>Over the last <select value=${range} onChange=${(e) => setRange(e.currentTarget.value)}><option value="hour">hour</option><option value="day">day</option></select></label>
      <label>per <select value=${group} onChange=${(e) => setGroup(e.currentTarget.value)}>${GROUPS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}</select></label>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${rows && (rows.length === 0 ? html`<p>No requests in this range.</p>` : html`<div class="charts">
      ${chart(`Requests per ${per}`, 'requests', 'requests')}
      ${chart(`Errors per ${per}`, 'errors', 'errors')}
      ${chart('Latency p99', 'p99_ms', 'ms')}
      ${chart(`Tokens per ${per}`, 'total_tokens', 'tokens')}
    </div>`)}
  </section>`;
}

export function Charts({ base, overview }) {
  return html`<section id="live"><h2>Queues, live</h2><${LiveQueues} overview=${overview} /></section><${LogCharts} base=${base} />`;
}
