/**
 * `onShutdown` in a real child process, signalled as a terminal and `npm start` signal it: the
 * drain runs to its end and the process exits 0, however many stop signals arrive meanwhile.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const lifecycle = fileURLToPath(new URL('./lifecycle.ts', import.meta.url));

/** A process whose shutdown takes 500 ms; resolves with its exit code and what it printed. */
async function stopWith(signals: NodeJS.Signals[]): Promise<{ code: number | null; lines: string[] }> {
  const script = `
    import { onShutdown } from ${JSON.stringify(lifecycle)};
    const log = { info: (_o, m) => console.log(m), error: (_o, m) => console.log(m) };
    onShutdown(async () => {
      console.log('draining');
      await new Promise((resolve) => setTimeout(resolve, 500)); // the work a drain stands for
      console.log('drained');
    }, 5000, log);
    setInterval(() => {}, 1000);
    console.log('ready');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const printed = (line: string) => new Promise<void>((resolve) => {
    const seen = () => {
      if (!lines.includes(line)) return;
      child.stdout.off('data', seen);
      resolve();
    };
    child.stdout.on('data', seen);
  });
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    lines.push(...text.split('\n').filter(Boolean));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await printed('ready');
  const [first, ...later] = signals;
  const draining = printed('draining');
  child.kill(first!);
  // The later signals arrive while the drain runs (500 ms from its start).
  await draining;
  for (const signal of later) child.kill(signal);
  return { code: await exited, lines };
}

describe('onShutdown', () => {
  it('drains on SIGTERM and exits 0', async () => {
    const { code, lines } = await stopWith(['SIGTERM']);
    expect(lines).toEqual(['ready', 'shutting down', 'draining', 'drained']);
    expect(code).toBe(0);
  });

  it('finishes the drain when a second signal follows the first (Ctrl-C under npm start: SIGINT, then SIGTERM)', async () => {
    const { code, lines } = await stopWith(['SIGINT', 'SIGTERM']);
    expect(lines).toEqual(['ready', 'shutting down', 'draining', 'drained']);
    expect(code).toBe(0);
  });
});
