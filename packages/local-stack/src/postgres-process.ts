/**
 * The embedded PostgreSQL as a process of its own, for `npm start`, started by stores-apart.ts
 * in a process group of its own: prints its URL once it answers, and stops it (a fast shutdown) when its stdin ends,
 * that is when the stack stops or the process that started it is gone.
 */
import { startEmbeddedPostgres } from './embedded-postgres.ts';

const [dataDir, port] = process.argv.slice(2);
let database;
try {
  database = await startEmbeddedPostgres({ dataDir: dataDir!, port: Number(port) });
} catch (error) {
  process.stderr.write(error instanceof Error ? error.message : 'it exited at once; is another server using its data folder?');
  process.exit(1);
}
process.stdout.write(`${database.url}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void database.stop().finally(() => process.exit(0));
};
process.stdin.on('end', stop).on('close', stop).on('error', stop).resume();
