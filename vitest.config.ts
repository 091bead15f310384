import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'services/*/test/**/*.test.ts', 'test/**/*.test.ts', 'scripts/**/*.test.ts'],
    pool: 'forks',
    // One migrated PostgreSQL made for the run, copied by each file's (postgres-template.ts).
    globalSetup: ['./vitest.global-setup.ts'],
    // Generous, so a suite sharing the machine with other work (a second copy of itself, a build)
    // is slower, not red: each file starts real Redis, PostgreSQL and Node processes, and a cold
    // start of them under load took over a minute. A test's own waits use polling, not sleeps.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    // Each file starts its own Redis and processes. Three at a time on a 2-core machine: most of a
    // file's time is waiting (fault windows, slow readers, time-outs), and two whole suites at once
    // (four files at a time) passed three rounds in a row on it.
    maxWorkers: 3,
  },
});
