/**
 * A newcomer's first minute, as the README tells it: `npm start` and `npm run demo` run as a
 * person runs them (npm, then Ctrl-C to the process group), with what they print read as a
 * person reads it, and the demo's printed curl lines run as they are; root's printed token kept
 * in the shell across restarts, and a Ctrl-C with a stream in flight.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { repoRoot, startMockOpenAIUpstream } from '@gateway/testkit';

const scratch = mkdtempSync(join(tmpdir(), 'gw-first-minute-'));
const groups: number[] = [];
afterAll(() => {
  // A test that failed half-way leaves nothing running behind it.
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(scratch, { recursive: true, force: true });
});

interface Running { child: ChildProcess; output: () => string; banner: string }

/** Runs `npm run <script>` in its own process group and resolves once it prints `until`. */
async function npmRun(script: string, env: Record<string, string>, until: RegExp): Promise<Running> {
  const child = spawn('npm', ['run', '--silent', script], {
    cwd: repoRoot, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PORT: '0', LOG_FORMAT: '', LOG_LEVEL: 'info', ...env },
  });
  groups.push(child.pid!);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await expect.poll(() => until.test(output) || child.exitCode !== null, { timeout: 60_000, interval: 100 }).toBe(true);
  expect(child.exitCode, output).toBeNull();
  // The banner is one block that ends with a blank line: wait for it to arrive whole.
  await expect.poll(() => output.slice(output.search(until)).includes('\n\n'), { timeout: 5000 }).toBe(true);
  return { child, output: () => output, banner: output.slice(output.search(until)) };
}

/**
 * Ctrl-C, as a terminal sends it: SIGINT to the whole process group. Resolves true when npm
 * ended cleanly (0, or npm's own ending by the signal it was sent) and nothing is left
 * listening on the gateway's port.
 */
async function interrupt(running: Running): Promise<boolean> {
  const exited = new Promise<boolean>((resolve) => running.child.once('exit', (code, signal) => resolve(code === 0 || signal === 'SIGINT')));
  process.kill(-running.child.pid!, 'SIGINT');
  const clean = await exited;
  const gateway = /Gateway\s+(\S+)/.exec(running.banner)?.[1];
  const stillUp = gateway ? await fetch(`${gateway}/healthz`).then(() => true, () => false) : false;
  return clean && !stillUp;
}

const field = (banner: string, label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(banner)?.[1] ?? '';
const redisPort = (banner: string) => Number(/on redis:\/\/127\.0\.0\.1:(\d+)/.exec(banner)?.[1]);

async function redisIsGone(port: number): Promise<boolean> {
  const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return false;
  } catch {
    return true;
  } finally {
    probe.disconnect();
  }
}

/** A management call with root's printed token: its status and body. */
async function asRoot(gateway: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; data: any }> {
  const answer = await fetch(`${gateway}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, data: ((await answer.json()) as { data?: unknown }).data };
}

describe('npm start', () => {
  const data = join(scratch, 'start-redis');
  /** Root's access token as the first start printed it. */
  let printedToken = '';

  it('prints JSON logs when not on a terminal, then a banner saying where everything is', async () => {
    const run = await npmRun('start', { REDIS_DATA_DIR: data }, /The AI model gateway is up\./);
    // Each service's log lines arrive through its own pipe, so some may come after the banner.
    const logLines = () => run.output().split('\n').slice(0, -1).filter((l) => l.startsWith('{'));
    const readyServices = () => new Set(logLines().map((l) => JSON.parse(l) as { msg?: string; service?: string }).filter((l) => l.msg === 'ready').map((l) => l.service));
    await expect.poll(() => readyServices().size).toBe(5);
    for (const line of logLines()) expect(() => JSON.parse(line)).not.toThrow();
    expect(run.output()).toMatch(/Root password \(shown once\): \S+/);
    printedToken = /Access token \(shown once\): (\S+)/.exec(run.output())?.[1] ?? '';
    expect(printedToken).not.toBe('');

    const gateway = field(run.banner, 'Gateway');
    expect(gateway).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(field(run.banner, 'Dashboard')).toBe(`${gateway}/admin/queues`);
    expect(field(run.banner, 'Metrics')).toBe(`${gateway}/metrics`);
    expect(field(run.banner, 'Data')).toBe(`${data}/`);
    // SECRET_KEY was made on this first run, beside the data, readable by its owner alone.
    const secretKeyFile = join(scratch, 'secret-key');
    expect(field(run.banner, 'Secret key')).toBe(secretKeyFile);
    expect(run.banner).toMatch(/made just now; back it up/);
    expect(statSync(secretKeyFile).mode & 0o777).toBe(0o600);
    expect(run.banner).toMatch(/curl -s \S+\/api\/channel\/ .*\n.*"type":"openai"/);
    expect(run.banner).toContain('npm run demo');

    expect((await fetch(`${gateway}/readyz`)).status).toBe(200);
    const dashboard = await fetch(field(run.banner, 'Dashboard'), { headers: { accept: 'text/html' } });
    expect(dashboard.status).toBe(401);
    expect(await dashboard.text()).toContain('Sign in');
    expect((await fetch(field(run.banner, 'Metrics'))).status).toBe(401);

    expect(await interrupt(run)).toBe(true);
    expect(await redisIsGone(redisPort(run.banner))).toBe(true);
  }, 90_000);

  it('prints readable lines with LOG_FORMAT=pretty, and no credentials on a later start', async () => {
    // Started from a shell where the banner's advice was followed: the printed token exported
    // (as ADMIN_TOKEN, the name older banners gave).
    const run = await npmRun('start', { REDIS_DATA_DIR: data, LOG_FORMAT: 'pretty', ADMIN_TOKEN: printedToken }, /The AI model gateway is up\./);
    let interrupted = false;
    try {
      expect((await asRoot(field(run.banner, 'Gateway'), printedToken, 'GET', '/api/user/self')).status).toBe(200);
      expect(run.banner).not.toContain('$ADMIN_TOKEN');
      // A process's log lines are written off its event loop: the gateway's may come after the
      // banner on a loaded machine (the banner follows its health, not its log).
      await expect.poll(() => run.output(), { timeout: 10_000 }).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gateway › ready/m);
      expect(run.output().split('\n').some((line) => line.startsWith('{'))).toBe(false);
      expect(run.output()).not.toContain('shown once');
      expect(run.banner).not.toMatch(/made just now/);
      interrupted = true;
      expect(await interrupt(run)).toBe(true);
    } finally {
      // Stopped whatever failed, so the next start finds its stores' folders free.
      if (!interrupted) await interrupt(run).catch(() => false);
    }
  }, 90_000);

  it('keeps the printed token from a shell without it, and on Ctrl-C drains a stream in flight, answering 503 meanwhile', async () => {
    const run = await npmRun('start', { REDIS_DATA_DIR: data }, /The AI model gateway is up\./);
    const gateway = field(run.banner, 'Gateway');
    // The token printed at the first start works after a start with it in ADMIN_TOKEN and one without.
    expect((await asRoot(gateway, printedToken, 'GET', '/api/user/self')).status).toBe(200);

    // A stream of 60 words over about 3 s.
    const upstream = await startMockOpenAIUpstream({ text: Array.from({ length: 60 }, (_, i) => `w${i}`).join(' '), chunkDelayMs: 50 });
    try {
      const channel = await asRoot(gateway, printedToken, 'POST', '/api/channel/', { name: 'slow', type: 'openai', key: 'sk-test', base_url: upstream.url, models: ['slow-stream'] });
      expect(channel.status).toBe(200);
      const { key } = (await asRoot(gateway, printedToken, 'POST', '/api/token/', { name: 'stop-test', unlimited_quota: true })).data as { key: string };
      const stream = await fetch(`${gateway}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'stopped-stream' },
        body: JSON.stringify({ model: 'slow-stream', prompt: 'hello', stream: true }),
      });
      expect(stream.status).toBe(200);
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = (await reader.read()).value ?? '';
      const read = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return text;
          text += value;
        }
      })();

      // Ctrl-C with the stream under way.
      const exited = new Promise<number>((resolve) => run.child.once('exit', () => resolve(Date.now())));
      const interruptedAt = Date.now();
      process.kill(-run.child.pid!, 'SIGINT');
      // A request sent meanwhile is told to come back (503, Retry-After), never refused.
      const answers: string[] = [];
      const ask = () => fetch(`${gateway}/v1/models`, { headers: { authorization: `Bearer ${key}` } })
        .then((answer) => `${answer.status} ${answer.headers.get('retry-after') ?? '-'}`, (error: Error) => `refused ${String((error.cause as Error | undefined)?.message ?? error.message)}`);
      await expect.poll(async () => answers[answers.push(await ask()) - 1], { timeout: 5000, interval: 100 }).toMatch(/^(503|refused)/);
      expect(answers.at(-1)).toMatch(/^503 \d+$/);

      // The stream ends with all its 60 words and [DONE].
      const events = (await read).split('\n\n').filter((event) => event.startsWith('data: '));
      const words = events.filter((event) => event !== 'data: [DONE]').map((event) => (JSON.parse(event.slice(6)) as { choices: { text: string }[] }).choices[0]?.text ?? '').join('');
      expect(words.trim().split(/\s+/)).toHaveLength(60);
      expect(events.at(-1)).toBe('data: [DONE]');
      // Stopped within the gateway's bound (SHUTDOWN_TIMEOUT_MS, 10 s, and 5 s to write records), the workers' after it.
      const stoppedIn = (await exited) - interruptedAt;
      expect(stoppedIn).toBeLessThan(15_000);
      console.log(`Ctrl-C with a 3-second stream in flight: stopped in ${stoppedIn} ms, the stream whole (${events.length} events); answers meanwhile: ${answers.join(', ')}`);
      expect(run.output()).not.toContain('[not an Error]');
      expect(await redisIsGone(redisPort(run.banner))).toBe(true);
    } finally {
      await upstream.close();
    }

    // After a restart, the stream's row is in the request log: 200, its 60 words charged.
    const again = await npmRun('start', { REDIS_DATA_DIR: data }, /The AI model gateway is up\./);
    const rows = await asRoot(field(again.banner, 'Gateway'), printedToken, 'GET', '/api/log/?request_id=stopped-stream');
    expect(rows.status).toBe(200);
    expect(rows.data.items).toMatchObject([{ status: 200, streamed: true, prompt_tokens: 1, completion_tokens: 60 }]);
    expect(await interrupt(again)).toBe(true);
  }, 150_000);
});

describe('npm run demo', () => {
  const data = join(scratch, 'demo');
  const env = { DEMO_DATA_DIR: data, LOG_LEVEL: 'warn' };
  const ready = /The gateway demo is up\./;

  it('prints a key, the models and curl lines that give a completion, a stream and a playable WAV', async () => {
    const run = await npmRun('demo', env, ready);
    expect(run.banner).toMatch(/stand-in/);
    expect(field(run.banner, 'API key')).toMatch(/^sk-\w{48}$/);
    const curls = run.banner.split('\n').filter((line) => line.includes('│   curl')).map((line) => line.replace(/^.*│\s+/, ''));
    expect(curls).toHaveLength(3);

    const wav = join(scratch, 'hello.wav');
    const sh = (command: string) => spawnSync('sh', ['-c', command], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 32 * 1024 * 1024 });
    const completion = sh(curls[0]!);
    expect(JSON.parse(completion.stdout)).toMatchObject({
      object: 'text_completion', model: 'gpt-3.5-turbo-instruct', choices: [{ text: expect.stringContaining('stand-in for a real model') }],
    });
    const stream = sh(curls[1]!).stdout;
    expect(stream).toMatch(/^data: \{.*"text":"This"/);
    expect(stream.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const speech = sh(curls[2]!.replace(/ hello\.wav$/, ` ${wav}`));
    expect(speech.status, speech.stderr).toBe(0);

    const audio = readFileSync(wav);
    expect(audio.toString('latin1', 0, 4)).toBe('RIFF');
    expect(audio.readUInt32LE(24)).toBe(24_000);
    const seconds = (audio.length - 44) / 48_000;
    expect(seconds).toBeGreaterThan(1.5);
    // Speech, not silence: a good share of the samples are loud.
    let loud = 0;
    for (let i = 44; i + 1 < audio.length; i += 2) if (Math.abs(audio.readInt16LE(i)) > 1000) loud++;
    expect(loud / ((audio.length - 44) / 2)).toBeGreaterThan(0.1);

    expect(await interrupt(run)).toBe(true);
    expect(await redisIsGone(redisPort(run.banner))).toBe(true);
    expect(statSync(join(data, 'credentials.json')).mode & 0o777).toBe(0o600);

    // Again: the same key, and still one channel of each kind.
    const again = await npmRun('demo', env, ready);
    expect(field(again.banner, 'API key')).toBe(field(run.banner, 'API key'));
    const { adminToken } = JSON.parse(readFileSync(join(data, 'credentials.json'), 'utf8')) as { adminToken: string };
    const channels = await fetch(`${field(again.banner, 'Gateway')}/api/channel/`, { headers: { authorization: `Bearer ${adminToken}` } });
    const names = ((await channels.json()) as { data: { items: { name: string; status: number }[] } }).data.items.map((c) => c.name);
    expect(names.sort()).toEqual(['demo-gemini', 'demo-openai']);
    expect(sh(curls[0]!.replace(/127\.0\.0\.1:\d+/, new URL(field(again.banner, 'Gateway')).host)).stdout).toContain('stand-in');
    expect(await interrupt(again)).toBe(true);
  }, 120_000);
});
