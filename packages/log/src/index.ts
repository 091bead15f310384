/**
 * @gateway/log owns logging: pino JSON lines (or pino-pretty's readable lines on a terminal),
 * with every secret-bearing field redacted (Authorization, x-goog-api-key, passwords, channel
 * keys, tokens) wherever it appears.
 */
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

export const redactedPaths = [
  'req.headers.authorization',
  'req.headers["x-goog-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-goog-api-key"]',
  'authorization',
  'password',
  'key',
  'access_token',
  '*.password',
  '*.key',
  '*.access_token',
  '*.authorization',
  'payload.body.password',
  'payload.body.key',
];

/**
 * An error as a log line may show it: its class, its message and its stack, nothing else. An
 * error's other properties can hold what must never be logged (ioredis puts the failed
 * command's arguments on its errors: hashes, keys, job data), so they are dropped, and so is
 * a long message's tail.
 */
export function safeError(error: unknown): { type: string; message: string; stack?: string } | unknown {
  if (!(error instanceof Error)) return error === undefined || error === null ? error : { type: typeof error, message: '[not an Error]' };
  const message = error.message.length > 300 ? `${error.message.slice(0, 300)}…` : error.message;
  const frames = error.stack?.split('\n').filter((line) => line.trimStart().startsWith('at ')).join('\n');
  return { type: error.constructor?.name ?? error.name, message, ...(frames ? { stack: frames } : {}) };
}

/**
 * Log lines go to stdout through an asynchronous destination: lines written while an earlier
 * write is still in flight are coalesced into one write, instead of one blocking write(2) per
 * line (measured: a tenth of the gateway's CPU at load went to synchronous log writes). Whatever
 * is still buffered is flushed when the process exits.
 */
const stdout = pino.destination({ dest: 1, sync: false });
process.once('exit', () => {
  try {
    stdout.flushSync();
  } catch {
    // Nothing left to write, or stdout is gone.
  }
});

/** `pretty`: one readable, coloured line per entry, for people; `json`: one JSON object per line, for machines. */
export type LogFormat = 'pretty' | 'json';

/** LOG_FORMAT when set, else pretty on a terminal and JSON otherwise (a pipe, a file, a container's log). */
export function defaultLogFormat(env: NodeJS.ProcessEnv = process.env): LogFormat {
  if (env.LOG_FORMAT === 'pretty' || env.LOG_FORMAT === 'json') return env.LOG_FORMAT;
  return process.stdout.isTTY ? 'pretty' : 'json';
}

let pretty: DestinationStream | undefined;

/** pino-pretty, loaded only when asked for; it formats in this thread and writes to stdout. */
function prettyStdout(): DestinationStream {
  if (!pretty) {
    const build = createRequire(import.meta.url)('pino-pretty') as (options: PrettyOptions) => DestinationStream;
    pretty = build({
      destination: 1,
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service,name',
      messageFormat: '{service} › {msg}',
      singleLine: true,
    });
  }
  return pretty;
}

export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info', format: LogFormat = defaultLogFormat()): Logger {
  return pino(
    {
      name: service,
      level,
      base: { service, pid: process.pid },
      redact: { paths: redactedPaths, censor: '[redacted]' },
      serializers: { err: safeError, error: safeError },
    },
    format === 'pretty' ? prettyStdout() : stdout,
  );
}
