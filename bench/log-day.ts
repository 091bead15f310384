/**
 * A day of request log, made before the batches run, so that a batch's own rows land in a table
 * and indexes a day of traffic has already grown (issue 42: a batch's cost must not grow with
 * what the tables hold). The rows are copies of one row the workers wrote through the gateway,
 * each with its own request id (random, as real ones are, so every index takes them all over),
 * user, key, channel and model, spread over today's partition from midnight (UTC) to now: the
 * partition every row of the run goes to.
 */
import pg from 'pg';

export interface LogDay {
  rows: number;
  ms: number;
  /** The partition's size on disk with its indexes, in MB, after the fill. */
  partitionMb: number;
}

export async function fillLogDay(databaseUrl: string, rows: number, chunk = 100_000): Promise<LogDay> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const started = performance.now();
    const template = await untilARowIsLogged(db);
    for (let from = 1; from <= rows; from += chunk) {
      await db.query(
        `INSERT INTO request_log
         SELECT d.* FROM request_log r, generate_series($1::int, $2::int) g,
           LATERAL jsonb_populate_record(NULL::request_log, to_jsonb(r) || jsonb_build_object(
             'created_at', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                           + (now() - (date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')) * (g::float8 / $3),
             'request_id', 'day-' || md5(g::text),
             'user_id', 1 + g % 1000, 'token_id', 1 + g % 3000, 'channel_id', 1 + g % 20,
             'model', 'day-model-' || (g % 50))) d
         WHERE r.request_id = $4`,
        [from, Math.min(rows, from + chunk - 1), rows + 1, template],
      );
    }
    await db.query('VACUUM (ANALYZE) request_log'); // what autovacuum would have done over the day
    const { rows: size } = await db.query<{ bytes: string }>(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
       WHERE i.inhparent = 'request_log'::regclass`);
    return { rows, ms: performance.now() - started, partitionMb: Number(size[0]!.bytes) / 1024 / 1024 };
  } finally {
    await db.end();
  }
}

/** A row the workers wrote (the request log is written off the reply path, within a second). */
async function untilARowIsLogged(db: pg.Client): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const { rows } = await db.query<{ request_id: string }>(`SELECT request_id FROM request_log WHERE request_id NOT LIKE 'day-%' LIMIT 1`);
    if (rows[0]) return rows[0].request_id;
    if (Date.now() > deadline) throw new Error('no request was logged within 15 s: is the request log on?');
    await new Promise((r) => setTimeout(r, 100));
  }
}
