/**
 * @gateway/log owns logging: pino JSON lines, with every secret-bearing field redacted
 * (Authorization, x-goog-api-key, passwords, channel keys, tokens) wherever it appears.
 */
import { pino, type Logger } from 'pino';

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

export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service, pid: process.pid },
    redact: { paths: redactedPaths, censor: '[redacted]' },
  });
}
