/**
 * @gateway/log owns logging: pino JSON lines (or pino-pretty's readable lines on a terminal),
 * with every secret-bearing field redacted (Authorization, x-goog-api-key, x-api-key, passwords, channel
 * keys, tokens) wherever it appears.
 */
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type { Logger } from 'pino';

export const redactedPaths = [
  'req.headers.authorization',
  'req.headers["x-goog-api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-goog-api-key"]',
  'headers["x-api-key"]',
  '["x-api-key"]',
  '*["x-api-key"]',
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
  if (error === undefined || error === null) return error;
  if (!(error instanceof Error)) return notAnError(error);
  const message = cut(error.message);
  const frames = error.stack?.split('\n').filter((line) => line.trimStart().startsWith('at ')).join('\n');
  return { type: error.constructor?.name ?? error.name, message, ...(frames ? { stack: frames } : {}) };
}

const cut = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/**
 * What was thrown or emitted in an error's place, as much of it as an error would show: a string
 * (some libraries emit an error's message alone) or a number as it is, an object by its class and
 * its `message`, or its field names (never their values).
 */
function notAnError(value: unknown): { type: string; message: string } {
  if (typeof value !== 'object' && typeof value !== 'function') return { type: typeof value, message: cut(String(value)) };
  const message = (value as { message?: unknown }).message;
  const type = (value as object).constructor?.name ?? typeof value;
  if (typeof message === 'string') return { type, message: cut(message) };
  const fields = Object.keys(value as object).slice(0, 20);
  return { type, message: fields.length ? `not an Error; fields: ${fields.join(', ')}` : 'not an Error; no fields' };
}

/**
 * Log lines go to stdout through an asynchronous destination: lines written while an earlier
 * write is still in flight are coalesced into one write, instead of one blocking write(2) per
 * line. They are held until 4 KiB have gathered, or for LOG_HOLD_MS at most (10 ms by default),
 * so that at load a process writes once for many requests (docs/benchmarks.md, "Why the tuned
 * constants are what they are").
 * Whatever is still held is written when the process exits. Warnings and errors go out at once,
 * with whatever is held before them, as every line did before the hold (the lines that explain a
 * crash must not wait out the hold in a process then killed outright, or out of memory), and so
 * does a service's `ready` line (`flushLogs`), which whatever started it may be waiting for.
 */
/**
 * The longest a line is held (LOG_HOLD_MS, 0 to 1,000; default 10): 10 ms keeps most of the
 * saving (a few lines a write at a few hundred requests a second) while a line is still on its
 * way within a few ms of its request's answer, as a reader of the logs expects. 0: each line is
 * written as soon as no write is in flight, as before lines were held.
 */
const holdSetting = Number(process.env.LOG_HOLD_MS ?? 10);
const LOG_HOLD_MS = Number.isInteger(holdSetting) && holdSetting >= 0 && holdSetting <= 1000 ? holdSetting : 10;

const stdout = pino.destination({ dest: 1, sync: false, minLength: LOG_HOLD_MS > 0 ? 4096 : 0 });
/** Lines at this level (warn) and above are written at once. */
const WRITTEN_AT_ONCE = pino.levels.values.warn!;
const openWrite = stdout.write;
const buffered = stdout as unknown as { _len: number; destroyed: boolean };
/** A flush is due (armed by a line held, so an idle process never wakes for its logs). */
let flushDue: NodeJS.Timeout | undefined;

function holdLogs(): void {
  if (LOG_HOLD_MS === 0) return;
  flushDue ??= setTimeout(() => {
    flushDue = undefined;
    flushLogs();
  }, LOG_HOLD_MS);
}

/** pino's logMethod hook for `stdout`: a line is held, or written at once with what is held before it. */
function holdingLogMethod(this: Logger, args: Parameters<Logger['info']>, method: Logger['info'], level: number): void {
  method.apply(this, args);
  if (level >= WRITTEN_AT_ONCE) flushLogs();
  else holdLogs();
}

/** Lines that must not wait came while a write was in flight: written as soon as it is done. */
let urgent = false;
// Emitted as a write completes, before SonicBoom has taken it off its buffer: flush after that.
stdout.on('write', () => {
  if (urgent) setImmediate(() => {
    urgent = false;
    flushLogs();
  });
});

/** Writes the log lines held now (a service's `ready` line, a warning). */
export function flushLogs(): void {
  // Not once stdout is gone (pino then swaps its write for a no-op; the held bytes stay held).
  if (LOG_HOLD_MS === 0 || buffered._len === 0 || buffered.destroyed || stdout.write !== openWrite) return;
  // A no-op while a write is in flight, and SonicBoom writes what came meanwhile only once it
  // reaches minLength: a warning among none but warnings would wait for the process's exit.
  stdout.flush();
  urgent = true;
}
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
      // Held lines are `stdout`'s (json); pino-pretty writes its own way.
      ...(format === 'pretty' ? {} : { hooks: { logMethod: holdingLogMethod } }),
    },
    format === 'pretty' ? prettyStdout() : stdout,
  );
}
