/**
 * What `npm start` and `npm run demo` print for a person once everything is up: where things
 * are, how to sign in, and the next step.
 */
import { relative } from 'node:path';
import type { LocalStack } from './local-stack.ts';
import { describeRedisTarget } from '@gateway/config';

const bold = (text: string) => (process.stdout.isTTY ? `\x1b[1m${text}\x1b[22m` : text);

/** Lines framed as one block, so they stand out among the log lines. */
export function block(title: string, lines: string[]): string {
  return `\n  ${bold(title)}\n${lines.map((line) => (line ? `  │ ${line}` : '  │')).join('\n')}\n\n`;
}

export function whereData(stack: LocalStack): string {
  if (stack.redisDataDir) {
    const shown = relative(process.cwd(), stack.redisDataDir);
    return `${shown.startsWith('..') ? stack.redisDataDir : shown}/ (embedded Redis, AOF; on ${describeRedisTarget(stack.redis)})`;
  }
  return typeof stack.redis === 'string' ? `your Redis at REDIS_URL (${describeRedisTarget(stack.redis)})` : `your ${describeRedisTarget(stack.redis)}`;
}

/** Where SECRET_KEY lives, said loudly the first time: without it the channel keys are lost. */
export function secretKeyLines(stack: LocalStack): string[] {
  if (!stack.secretKeyFile) return ['Secret key  SECRET_KEY from the environment (encrypts channel keys)'];
  const where = relative(process.cwd(), stack.secretKeyFile.path);
  const shown = where.startsWith('..') ? stack.secretKeyFile.path : where;
  return [
    `Secret key  ${shown} (mode 0600; encrypts channel keys at rest)` + (stack.secretKeyFile.created ? ': made just now; back it up with the data' : ''),
  ];
}

export function startBanner(stack: LocalStack): string {
  const g = stack.gatewayUrl;
  return block('The AI model gateway is up.', [
    `Gateway     ${g}   (POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages, /v1/embeddings, /v1/audio/speech, /v1beta/models/{model}:generateContent (and :streamGenerateContent, :embedContent, :batchEmbedContents); GET /v1/models)`,
    `Console     ${g}/admin   queues, channels, the request log and charts, live`,
    `Dashboard   ${g}/admin/queues   sign in as root with its password (printed once, when root was`,
    `            created on the first start; or the ADMIN_PASSWORD it was created with)`,
    `Metrics     ${g}/metrics   (send an admin's access token: Authorization: Bearer …)`,
    `Data        ${whereData(stack)}`,
    ...secretKeyLines(stack),
    '',
    // A name the gateway does not read: exported in the shell that starts it, ADMIN_TOKEN would
    // become a setting, and a start from a shell without it would change root's credentials.
    'Next: add your first channel (an upstream provider), with root\'s access token in ROOT_TOKEN',
    '(export ROOT_TOKEN=…: the one printed when root was created, or the ADMIN_TOKEN you set):',
    `  curl -s ${g}/api/channel/ -H "Authorization: Bearer $ROOT_TOKEN" -H "Content-Type: application/json" \\`,
    `    -d '{"name":"openai","type":"openai","key":"sk-…","base_url":"https://api.openai.com","models":["gpt-3.5-turbo-instruct"]}'`,
    'then create an API key (docs/management.md). No provider key at hand? Try `npm run demo`.',
    'Ctrl-C stops everything, once the requests in flight have ended (new ones are answered 503 meanwhile).',
  ]);
}
