import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { nodeFlagsOf } from '@gateway/config';

export type ServiceName = 'gateway' | 'completion-worker' | 'audio-worker' | 'admin-worker' | 'batch-worker';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The SECRET_KEY services get in tests unless a test sets its own (32 bytes, base64). */
export const TEST_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

export interface ServiceProcess {
  name: ServiceName;
  child: ChildProcess;
  /** Parsed JSON log lines so far (non-JSON lines as `{ line }`). */
  logs: Record<string, unknown>[];
  /** Everything the process printed, raw. */
  output: string[];
  /** Fields of the `ready` log line (the gateway's has `port`). */
  ready: Record<string, unknown>;
  /** The gateway's base URL. */
  url: string;
  /** Sends a signal and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts one service as its own Node process, exactly as `npm run start:<name>` would, and
 * resolves when it logs `ready`.
 */
export async function startService(
  name: ServiceName,
  env: Record<string, string>,
  timeoutMs = 90_000,
  /**
   * `keepLogs: false` stops keeping log lines once ready (benchmarks: the lines are read and
   * dropped); `cwd` runs the service from another copy of the project (the image's install test).
   */
  { keepLogs = true, cwd = repoRoot }: { keepLogs?: boolean; cwd?: string } = {},
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...nodeFlagsOf(name), `services/${name}/src/main.ts`], {
    cwd,
    env: { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: 'json', PORT: '0', SECRET_KEY: TEST_SECRET_KEY, GW_PARENT_PID: String(process.pid), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} not ready within ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    let isReady = false;
    const onLine = (line: string) => {
      if (isReady && !keepLogs) return;
      output.push(line);
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        entry = { line };
      }
      logs.push(entry);
      if (entry.msg === 'ready') {
        isReady = true;
        clearTimeout(timer);
        resolve(entry);
      }
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready:\n${output.join('\n')}`));
    });
  });
  return {
    name,
    child,
    logs,
    output,
    ready,
    url: `http://127.0.0.1:${String(ready.port ?? '')}`,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/**
 * Resolves once every line `gateway` had logged before the call has arrived: a service holds its
 * log lines for up to LOG_HOLD_MS (@gateway/log) and writes them in order, so once the line of a
 * request sent now has come, every earlier one has. For a check that no line holds something.
 */
export async function gatewayLogsCaughtUp(gateway: ServiceProcess, timeoutMs = 10_000): Promise<void> {
  const marker = `logs-caught-up-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const from = gateway.logs.length;
  await (await fetch(`${gateway.url}/healthz`, { headers: { 'x-request-id': marker } })).arrayBuffer();
  const until = Date.now() + timeoutMs;
  while (!gateway.logs.slice(from).some((line) => line.reqId === marker)) {
    if (Date.now() > until) throw new Error(`the gateway's log line of request ${marker} did not arrive within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
