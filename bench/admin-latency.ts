/**
 * Management round trip: 1,000 sequential calls through the gateway, the admin queue and the
 * admin worker (real processes, a private Redis), for a read (GET /api/channel/:id), a write
 * (PUT /api/channel/) and a login (scrypt dominates). Prints p50/p99 per operation.
 *   node bench/admin-latency.ts [calls]
 */
import { startStack } from '@gateway/testkit';
import { percentile } from './stats.ts';

const calls = Number(process.argv[2] ?? 1000);
const stack = await startStack();
try {
  const channel = await stack.admin('POST', '/api/channel/', { name: 'bench', type: 'openai', key: 'sk-bench-key-000000', base_url: 'http://127.0.0.1:9', models: ['m'] });
  const id = channel.body.data.id;
  await stack.admin('POST', '/api/user/', { username: 'bench', password: 'bench-password' });

  const scenarios: [string, () => Promise<unknown>, number][] = [
    ['GET /api/channel/:id', () => stack.admin('GET', `/api/channel/${id}`), calls],
    ['PUT /api/channel/', () => stack.admin('PUT', '/api/channel/', { id, weight: 2 }), calls],
    ['POST /api/user/login', () => fetch(stack.gateway.url + '/api/user/login', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":"bench","password":"bench-password"}',
    }).then((r) => r.text()), Math.min(calls, 200)],
  ];
  const rows = [];
  for (const [name, call, n] of scenarios) {
    for (let i = 0; i < 20; i++) await call(); // warm-up
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await call();
      times.push(performance.now() - started);
      if (i % 100 === 0) process.stderr.write(`\r${name}: ${i}/${n}   `);
    }
    rows.push({ operation: name, calls: n, 'p50 ms': percentile(times, 50).toFixed(2), 'p99 ms': percentile(times, 99).toFixed(2) });
  }
  process.stderr.write('\n');
  console.table(rows);
} finally {
  await stack.stop();
}
