/**
 * One load run in a process of its own (so a 5,000-connection burst does not skew the latency
 * measured by another run beside it). Options arrive as JSON in argv[2]; the result goes back
 * over IPC. A run with a long duration ends when told to (`{cmd: 'stop'}`).
 *
 * Three kinds of run: autocannon (`connections`, `amount` or `duration`), whose latencies are
 * whole milliseconds; and `sequential: N`, N requests one after another over one keep-alive
 * connection, timed with hrtime, for latencies in microseconds (`sequential: 0` runs until
 * `forMs` has passed or it is told to stop, and `samples: true` sends every latency back, so a
 * caller can pool several runs); and `once: true`, a burst of one request on each of
 * `connections` sockets (below). Each reports the CPU this process spent, so a cost table can
 * include the load generator.
 */
import autocannon from 'autocannon';
import { connect } from 'node:net';
import { Agent, request } from 'undici';

interface SequentialOptions { url: string; method: 'POST'; body: string; headers: Record<string, string>; sequential: number; forMs?: number; samples?: boolean }

const options = JSON.parse(process.argv[2]!) as autocannon.Options & Partial<SequentialOptions>;
const cpuBefore = process.cpuUsage();

/** The q-quantile of sorted values (undefined when there are none). */
const quantile = (sorted: number[], q: number): number | undefined => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

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
  const at = (q: number) => quantile(micros, q)!;
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

/**
 * `once: true`: every one of `connections` connections sends one request at the same moment and
 * waits for its answer, over plain sockets with the request's bytes written once. Autocannon
 * spent 2.1 to 3.0 s of CPU on a burst of 5,000 (0.4 to 0.6 ms a request, most of it in the
 * burst's first second), on the same two cores as the gateway it measured; a client's own CPU
 * is not the gateway's in use. Latency is from the connect to the answer's last byte.
 */
async function once(run: { url: string; method: string; body: string; headers: Record<string, string>; connections: number; timeout?: number }) {
  const url = new URL(run.url);
  const body = Buffer.from(run.body);
  const head = [`${run.method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`, `content-length: ${body.length}`, ...Object.entries(run.headers).map(([name, value]) => `${name}: ${value}`)];
  const bytes = Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]);
  const statusCodes: Record<string, number> = {};
  const millis: number[] = [];
  let errors = 0;
  let timeouts = 0;
  const started = performance.now();
  const one = () => new Promise<void>((resolve) => {
    const t0 = performance.now();
    const socket = connect(Number(url.port), url.hostname);
    let received: Buffer = Buffer.alloc(0);
    let status = 0;
    let ends = -1; // where the answer's last byte is, once its head is in
    let finished = false;
    const finish = (outcome: 'ok' | 'error' | 'timeout') => {
      // Once: a destroyed socket still closes, and a chunked answer's close follows its 'ok'.
      if (finished) return;
      finished = true;
      if (outcome === 'ok') {
        millis.push(performance.now() - t0);
        statusCodes[status] = (statusCodes[status] ?? 0) + 1;
      } else if (outcome === 'timeout') timeouts++;
      else errors++;
      socket.destroy();
      resolve();
    };
    socket.setTimeout((run.timeout ?? 120) * 1000, () => finish('timeout'));
    socket.on('error', () => finish('error'));
    socket.on('close', () => ends < 0 || received.length < ends ? finish('error') : undefined);
    socket.on('connect', () => socket.write(bytes));
    socket.on('data', (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      if (ends < 0) {
        const headEnd = received.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const headText = received.subarray(0, headEnd).toString('latin1');
        status = Number(headText.slice(9, 12));
        const length = /\r\ncontent-length: *(\d+)/i.exec(headText);
        ends = length ? headEnd + 4 + Number(length[1]) : Infinity;
      }
      if (received.length >= ends || (ends === Infinity && received.subarray(-5).toString() === '0\r\n\r\n')) finish('ok');
    });
  });
  await Promise.all(Array.from({ length: run.connections }, one));
  const durationMs = performance.now() - started;
  millis.sort((a, b) => a - b);
  const at = (q: number) => Math.round(quantile(millis, q) ?? 0);
  const ok = Object.entries(statusCodes).reduce((n, [code, count]) => (code.startsWith('2') ? n + count : n), 0);
  return {
    requests: millis.length, rps: millis.length / (durationMs / 1000), p50: at(0.5), p99: at(0.99), max: at(1),
    non2xx: millis.length - ok, errors, timeouts, durationMs, ok, statusCodes,
  };
}

const result = options.sequential !== undefined ? await sequential(options as SequentialOptions)
  : (options as { once?: boolean }).once ? await once(options as Parameters<typeof once>[0])
  : await cannon();
const cpu = process.cpuUsage(cpuBefore);
process.send!({ type: 'result', result: { ...result, cpuMs: (cpu.user + cpu.system) / 1000 } });
process.disconnect();
