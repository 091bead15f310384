/**
 * `npm run demo`: the whole gateway on an embedded Redis of its own (`.data/demo`, apart from
 * `npm start`'s data), plus a local demo upstream standing in for OpenAI and Gemini, with the
 * channels and an API key already made. It prints the key, the models and three curl lines to
 * try. Everything is real but the upstream, which says so in every answer.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { block, whereData } from '../banner.ts';
import { configOrExit, startLocalStack } from '../local-stack.ts';
import { ensureDemoRecords, type DemoRecords } from './setup.ts';
import { startDemoUpstream } from './upstream.ts';

interface DemoCredentials { adminToken: string; adminPassword: string; apiKey?: string }

const dataDir = resolve(process.env.DEMO_DATA_DIR || '.data/demo');
const credentialsFile = join(dataDir, 'credentials.json');

/** Root's token and password for the demo, made on the first run and kept (mode 0600) beside its data. */
function demoCredentials(): DemoCredentials {
  if (existsSync(credentialsFile)) return JSON.parse(readFileSync(credentialsFile, 'utf8')) as DemoCredentials;
  const credentials = { adminToken: randomBytes(24).toString('base64url'), adminPassword: randomBytes(12).toString('base64url') };
  saveCredentials(credentials);
  return credentials;
}

function saveCredentials(credentials: DemoCredentials): void {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(credentialsFile, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  chmodSync(credentialsFile, 0o600);
}

/** `preferred` when it is free on `host`, else any free port. */
function portOr(preferred: number, host: string): Promise<number> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', () => {
      const any = createServer();
      any.listen(0, host, () => {
        const address = any.address();
        any.close(() => done(typeof address === 'object' && address ? address.port : 0));
      });
    });
    probe.listen(preferred, host, () => probe.close(() => done(preferred)));
  });
}

function demoBanner(gatewayUrl: string, records: DemoRecords, credentials: DemoCredentials, data: string): string {
  const g = gatewayUrl;
  const auth = `-H "Authorization: Bearer ${records.apiKey}" -H "Content-Type: application/json"`;
  const speech = JSON.stringify({
    contents: [{ parts: [{ text: 'Hello! This voice came through the gateway, from its demo upstream.' }] }],
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
  });
  return block('The gateway demo is up. The upstream is a local stand-in, not a real model.', [
    `Gateway     ${g}`,
    `API key     ${records.apiKey}`,
    `Models      ${records.models.completion} (OpenAI completions), ${records.models.speech} (Gemini speech)`,
    `Console     ${g}/admin   queues, channels, the request log and charts (same sign-in)`,
    `Dashboard   ${g}/admin/queues   sign in as root / ${credentials.adminPassword}`,
    `Data        ${data}; root's credentials and SECRET_KEY beside it, in ${dataDir}`,
    '',
    'A completion:',
    `  curl -s ${g}/v1/completions ${auth} -d '{"model":"${records.models.completion}","prompt":"Say this is a test","max_tokens":32}'`,
    'The same, streamed:',
    `  curl -sN ${g}/v1/completions ${auth} -d '{"model":"${records.models.completion}","prompt":"Count to five","stream":true}'`,
    'Speech, saved as hello.wav (any audio player opens it):',
    `  curl -s ${g}/v1beta/models/${records.models.speech}:generateContent ${auth} -d '${speech}' | npx node scripts/pcm-to-wav.ts - hello.wav`,
    '',
    'The openai and @google/genai SDKs work too: baseURL ' + `${g}/v1` + ' (OpenAI) or ' + g + ' (Gemini), with the API key.',
    'Next: docs/api.md, every route with its body and answers. Ctrl-C stops everything.',
  ]);
}

const config = configOrExit();
const credentials = demoCredentials();
const upstream = await startDemoUpstream();
const stack = await startLocalStack({
  redisDataDir: join(dataDir, 'redis'),
  postgresDataDir: join(dataDir, 'postgres'),
  port: process.env.PORT ? config.PORT : await portOr(3000, config.HOST),
  host: config.HOST,
  env: { ...process.env, ADMIN_TOKEN: credentials.adminToken, ADMIN_PASSWORD: credentials.adminPassword },
  secretKeyFile: join(dataDir, 'secret-key'),
  queueShards: config.QUEUE_SHARDS,
});
try {
  const records = await ensureDemoRecords(stack.gatewayUrl, credentials.adminToken, upstream, credentials.apiKey);
  if (records.apiKey !== credentials.apiKey) saveCredentials({ ...credentials, apiKey: records.apiKey });
  process.stdout.write(demoBanner(stack.gatewayUrl, records, credentials, whereData(stack)));
} catch (error) {
  process.stderr.write(`error: could not set up the demo's channels and key: ${(error as Error).message}\n`);
  await stack.stop(1);
}
