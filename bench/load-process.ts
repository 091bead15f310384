/**
 * One load run in a process of its own (so a 5,000-connection burst does not skew the latency
 * measured by another run beside it). Options arrive as JSON in argv[2]; the result goes back
 * over IPC. A run with a long duration ends when told to (`{cmd: 'stop'}`).
 *
 * Two kinds of run: autocannon (`connections`, `amount` or `duration`), whose latencies are
 * whole milliseconds; and `sequential: N`, N requests one after another over one keep-alive
 * connection, timed with hrtime, for latencies in microseconds (`sequential: 0` runs until
 * `forMs` has passed or it is told to stop, and `samples: true` sends every latency back, so a
 * caller can pool several runs). Either reports the CPU this process spent, so a cost table can
 * include the load generator.
 */
import autocannon from 'autocannon';
import { Agent, request } from 'undici';

interface SequentialOptions { url: string; method: 'POST'; body: string; headers: Record<string, string>; sequential: number; forMs?: number; samples?: boolean }

const options = JSON.parse(process.argv[2]!) as autocannon.Options & Partial<SequentialOptions>;
const cpuBefore = process.cpuUsage();

async function sequential(run: SequentialOptions) {
  const dispatcher = new Agent({ connections: 1 });
  const micros: number[] = [];
  let failures = 0;
  let stopped = false;
  process.on('message', (message: { cmd: string }) => {
    if (message.cmd === 'stop') stopped = true;
  });
  const started = performance.now();
  const until = run.forMs === undefined ? Infinity : started + run.forMs;
  for (let i = 0; (run.sequential === 0 || i < run.sequential) && !stopped && performance.now() < until; i++) {
    const t0 = process.hrtime.bigint();
    const response = await request(run.url, { method: run.method, body: run.body, headers: run.headers, dispatcher });
    await response.body.arrayBuffer();
    micros.push(Number(process.hrtime.bigint() - t0) / 1000);
    if (response.statusCode !== 200) failures++;
  }
  const durationMs = performance.now() - started;
  const samples = run.samples ? [...micros] : undefined;
  micros.sort((a, b) => a - b);
  const at = (q: number) => micros[Math.min(micros.length - 1, Math.floor(q * micros.length))]!;
  await dispatcher.close();
  return {
    requests: micros.length, rps: micros.length / (durationMs / 1000), p50: at(0.5) / 1000, p99: at(0.99) / 1000, max: at(1) / 1000,
    p50us: at(0.5), p90us: at(0.9), p99us: at(0.99), non2xx: failures, errors: 0, timeouts: 0, durationMs, ok: micros.length - failures, statusCodes: {},
    samples,
  };
}

async function cannon() {
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (error, done) => (error ? reject(error) : resolve(done)));
    process.on('message', (message: { cmd: string }) => {
      if (message.cmd === 'stop') instance.stop();
    });
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    durationMs: result.duration * 1000,
    ok: result['2xx'],
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, (stat as { count: number }).count])),
  };
}

const result = options.sequential !== undefined ? await sequential(options as SequentialOptions) : await cannon();
const cpu = process.cpuUsage(cpuBefore);
process.send!({ type: 'result', result: { ...result, cpuMs: (cpu.user + cpu.system) / 1000 } });
process.disconnect();
