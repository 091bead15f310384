// The operations console's page: four views (overview, request log, charts, spend) over the console's
// JSON calls (/admin/api/…). Plain ES modules, loaded by the browser as they are: Preact for
// the components, htm for their templates, uPlot for the charts (see console-assets.ts).
// The locale and the start-up guard first: modules run in the order they are imported.
import './locale.js';
import { started } from './startup-failure.js';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html, LogSearch, Overview, useOverview } from './views.js';
import { Charts } from './charts.js';
import { Spend } from './spend.js';

const root = document.getElementById('console');
const base = root.dataset.base;

const VIEWS = [
  ['overview', 'Overview'],
  ['log', 'Request log'],
  ['charts', 'Charts'],
  ['spend', 'Spend'],
];

/** The view the address names (#log, #charts…), so a reload or a link keeps it. */
function viewOfHash() {
  const name = location.hash.replace(/^#/, '').split('?')[0];
  return VIEWS.some(([id]) => id === name) ? name : 'overview';
}

function Console() {
  const [view, setView] = useState(viewOfHash());
  useEffect(() => {
    const onHash = () => setView(viewOfHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  const overview = useOverview(base, view === 'overview' || view === 'charts');
  return html`
    <header>
      <h1>AI gateway · operations</h1>
      <nav aria-label="views">
        ${VIEWS.map(([id, label]) => html`<a href=${`#${id}`} aria-current=${view === id ? 'page' : undefined}>${label}</a>`)}
      </nav>
      <nav aria-label="elsewhere">
        <a href=${`${base}/queues`}>Queue dashboard (jobs)</a>
        <a href=${`${base}/queues/batches`}>Batches</a>
        <form method="post" action=${`${base}/logout`}><button type="submit">Sign out</button></form>
      </nav>
    </header>
    <main>
      ${view === 'overview' && html`<${Overview} base=${base} state=${overview} />`}
      ${view === 'log' && html`<${LogSearch} base=${base} />`}
      ${view === 'charts' && html`<${Charts} base=${base} overview=${overview} />`}
      ${view === 'spend' && html`<${Spend} base=${base} />`}
    </main>`;
}

root.replaceChildren();
render(html`<${Console} />`, root);
started();
