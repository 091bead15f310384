/**
 * The embedded Redis and PostgreSQL of `npm start` and `npm run demo`, each in a process group of
 * its own. A terminal's Ctrl-C is SIGINT to its whole foreground group: in it, Redis and
 * PostgreSQL stopped at once, before the gateway had drained and the workers had written their
 * log rows and charges. Apart, they stop when local-stack.ts says, last. Each is on a leash (its
 * stdin, a pipe from this process): closing it is the stop, and this process dying, even by
 * SIGKILL, closes it too, so neither outlives the stack.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface StoreProcess {
  /** Its leash, for an early exit (it died: the stack stops). */
  process: ChildProcess;
  /** Closes the leash and resolves once it has exited (Redis writes its AOF, PostgreSQL shuts down). */
  stop(): Promise<void>;
}

function leashed(child: ChildProcess): StoreProcess {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    process: child,
    stop: async () => {
      child.stdin?.end();
      await exited;
    },
  };
}

/**
 * redis-server, SIGTERM'd (it writes its AOF) when the leash closes: `read` returns at the
 * pipe's end. The sh exits when redis-server does.
 */
const REDIS_LEASH = 'exec 3<&0; redis-server "$@" </dev/null & pid=$!; (read _ignored <&3; kill $pid 2>/dev/null) & wait $pid';

export function spawnRedisApart(args: string[]): StoreProcess {
  return leashed(spawn('sh', ['-c', REDIS_LEASH, 'redis-server', ...args], { detached: true, stdio: ['pipe', 'inherit', 'inherit'] }));
}

const postgresProcess = fileURLToPath(new URL('./postgres-process.ts', import.meta.url));

/** The embedded PostgreSQL (postgres-process.ts); resolves with its URL once it answers, rejects with why it did not start. */
export async function startPostgresApart(dataDir: string, port: number): Promise<StoreProcess & { url: string }> {
  const child = spawn(process.execPath, [postgresProcess, dataDir, String(port)], { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  let said = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (said += text));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', () => reject(new Error(said.trim() || 'it exited at once; is another server using its data folder?')));
  });
  return { ...leashed(child), url };
}
