/**
 * One autocannon run in a process of its own (so a 5,000-connection burst does not skew the
 * latency measured by another run beside it). Options arrive as JSON in argv[2]; the result
 * goes back over IPC. A run with a long duration ends when told to (`{cmd: 'stop'}`).
 */
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2]!) as autocannon.Options;
const result = await new Promise<autocannon.Result>((resolve, reject) => {
  const instance = autocannon(options, (error, done) => (error ? reject(error) : resolve(done)));
  process.on('message', (message: { cmd: string }) => {
    if (message.cmd === 'stop') instance.stop();
  });
});
process.send!({
  type: 'result',
  result: {
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
  },
});
process.disconnect();
