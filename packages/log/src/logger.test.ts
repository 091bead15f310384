import { afterEach, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { defaultLogFormat, redactedPaths } from './index.ts';

const wasTTY = process.stdout.isTTY;
afterEach(() => {
  process.stdout.isTTY = wasTTY;
});

describe('the log format', () => {
  it('is pretty on a terminal and JSON otherwise', () => {
    process.stdout.isTTY = true;
    expect(defaultLogFormat({})).toBe('pretty');
    process.stdout.isTTY = false;
    expect(defaultLogFormat({})).toBe('json');
  });

  it('follows LOG_FORMAT whatever stdout is', () => {
    process.stdout.isTTY = true;
    expect(defaultLogFormat({ LOG_FORMAT: 'json' })).toBe('json');
    process.stdout.isTTY = false;
    expect(defaultLogFormat({ LOG_FORMAT: 'pretty' })).toBe('pretty');
  });
});

describe('an error in a log line', () => {
  it('shows its class, message and stack, never the properties that carry command arguments', async () => {
    const { safeError } = await import('./index.ts');
    const error = Object.assign(new Error('ERR Error running script'), { command: { name: 'evalsha', args: ['sk-channel-key-in-clear'] }, args: ['x'] });
    const shown = safeError(error) as Record<string, unknown>;
    expect(Object.keys(shown).sort()).toEqual(['message', 'stack', 'type']);
    expect(JSON.stringify(shown)).not.toContain('sk-channel-key-in-clear');
    expect(shown).toMatchObject({ type: 'Error', message: 'ERR Error running script' });
  });

  it('shows what was logged in an error\'s place: a message alone, a number, an object\'s message or its field names, never a field\'s value', async () => {
    const { safeError } = await import('./index.ts');
    // BullMQ's 'error' event was logged by its message alone: a line said only "[not an Error]".
    expect(safeError('Connection is closed.')).toEqual({ type: 'string', message: 'Connection is closed.' });
    expect(safeError(42)).toEqual({ type: 'number', message: '42' });
    expect(safeError({ message: 'socket hang up', code: 'ECONNRESET' })).toEqual({ type: 'Object', message: 'socket hang up' });
    const shown = safeError({ code: 'ECONNRESET', args: ['sk-secret-in-clear'] });
    expect(shown).toEqual({ type: 'Object', message: 'not an Error; fields: code, args' });
    expect(JSON.stringify(safeError('x'.repeat(1000)))).toHaveLength(JSON.stringify({ type: 'string', message: `${'x'.repeat(300)}…` }).length);
  });
});

describe('lines held before they are written', () => {
  /** Runs `body` in a process of its own logging JSON to a pipe; resolves with its stdout's lines. */
  const run = async (body: string, holdMs = 10) => {
    const { spawn } = await import('node:child_process');
    const script = `import { createLogger, flushLogs } from ${JSON.stringify(new URL('./index.ts', import.meta.url).pathname)};\nconst log = createLogger('t', 'info', 'json');\nvoid flushLogs;\n${body}`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_HOLD_MS: String(holdMs) } });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
    await new Promise((resolve) => child.on('close', resolve));
    return out.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { msg: string }).msg);
  };

  it('writes a warning at once, with the lines held before it, before a process killed outright just after dies', async () => {
    // Held for a second here: an info line is lost with a process killed 100 ms after it; a warning
    // goes out at once, as every line did before lines were held (an asynchronous write).
    const killedIn = (ms: number) => `setTimeout(() => process.kill(process.pid, 'SIGKILL'), ${ms});`;
    expect(await run(`log.info('held'); ${killedIn(100)}`, 1000)).toEqual([]);
    expect(await run(`log.info('held'); log.warn('the reason'); ${killedIn(100)}`, 1000)).toEqual(['held', 'the reason']);
  });

  it('loses no held line when the process exits, and holds an info line no longer than the hold', async () => {
    expect(await run("log.info('one'); log.info('two'); process.exit(0);")).toEqual(['one', 'two']);
    // Killed 100 ms after an info line (the hold is 10 ms): written by then.
    expect(await run("log.info('held'); setTimeout(() => process.kill(process.pid, 'SIGKILL'), 100);")).toEqual(['held']);
  });
});

describe('warnings only', () => {
  it('writes every one of a run of warnings promptly, those logged while a write is in flight too', async () => {
    const { spawn } = await import('node:child_process');
    // 40 warnings at once, then nothing: the process stays alive, and only its own flushes write
    // them. The clock starts when they are logged (stderr says so), not at the spawn: a Node
    // process takes longer than the hold to start on a loaded machine.
    const script = `import { createLogger } from ${JSON.stringify(new URL('./index.ts', import.meta.url).pathname)};\nconst log = createLogger('t', 'info', 'json');\nfor (let i = 0; i < 40; i++) log.warn({ i }, 'dropped');\nprocess.stderr.write('logged\\n');\nsetTimeout(() => {}, 5000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_HOLD_MS: '1000' } });
    let out = '';
    let logged = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { if (chunk.includes('logged')) logged = true; });
    try {
      await expect.poll(() => logged, { timeout: 60_000 }).toBe(true);
      await expect.poll(() => out.split('\n').filter(Boolean).length, { timeout: 900 }).toBe(40);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('a secret in a log line', () => {
  it('is redacted in every header that carries an API key, Anthropic\'s x-api-key among them', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _encoding, done) => { lines.push(String(chunk)); done(); } });
    const logger = pino({ redact: { paths: redactedPaths, censor: '[redacted]' } }, sink);
    logger.info({ req: { headers: { 'x-api-key': 'sk-ant-req-secret', authorization: 'Bearer sk-bearer-secret', 'x-goog-api-key': 'goog-secret', 'anthropic-version': '2023-06-01' } } }, 'request');
    logger.info({ headers: { 'x-api-key': 'sk-ant-upstream-secret' } }, 'upstream call');
    logger.info({ 'x-api-key': 'sk-ant-bare-secret', clientHeaders: { 'x-api-key': 'sk-ant-nested-secret' } }, 'job');
    const text = lines.join('');
    for (const secret of ['sk-ant-req-secret', 'sk-bearer-secret', 'goog-secret', 'sk-ant-upstream-secret', 'sk-ant-bare-secret', 'sk-ant-nested-secret']) expect(text).not.toContain(secret);
    expect(text).toContain('2023-06-01');
    expect(text.match(/\[redacted\]/g)).toHaveLength(6);
  });
});
