/**
 * Codex (the `@openai/codex` CLI, `codex exec`) through the gateway's Responses door, as a user
 * runs it: a model provider in `config.toml` whose `base_url` is the gateway, `wire_api =
 * "responses"`, the gateway key in the provider's `env_key`, a `CODEX_HOME` of its own and no
 * network besides the gateway. On an openai channel and on an anthropic channel, with a turn where
 * it runs a shell command the model asks for and sends the command's output back.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect } from 'vitest';
import { stackTest } from '@gateway/testkit/fixtures';

/** The package's launcher, which finds the platform binary in its optional dependency. */
const CODEX_LAUNCHER = resolve(import.meta.dirname, '../node_modules/@openai/codex/bin/codex.js');

const it = stackTest({
  database: true,
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '30000' },
  channelDefaults: { timeout_ms: 10_000 },
}).extend('workdir', async ({}, { onCleanup }): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'codex-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
});

let seq = 0;
const uniqueModel = () => `codex-model-${++seq}`;

/** Codex's configuration: one model provider, the gateway, speaking Responses; nothing else reached. */
const configToml = (gateway: string, model: string) => `
model = "${model}"
model_provider = "gw"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.gw]
name = "AI gateway"
base_url = "${gateway}/v1"
env_key = "GW_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`;

interface CodexRun {
  /** The final message, as `--output-last-message` wrote it. */
  lastMessage: string;
  /** The `--json` events, one per line. */
  events: Record<string, any>[];
}

/** Runs `codex exec` in `dir/work` against the gateway, with an environment of its own (none of this process's OpenAI settings). */
async function codex(dir: string, gateway: string, key: string, model: string, prompt: string): Promise<CodexRun> {
  const home = join(dir, 'codex-home');
  const work = join(dir, 'work');
  await mkdir(home, { recursive: true });
  await mkdir(work, { recursive: true });
  await writeFile(join(home, 'config.toml'), configToml(gateway, model));
  const lastFile = join(dir, 'last-message.txt');
  // Any host but the gateway goes through a proxy that does not exist: the run needs no other network.
  const offline = { HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', ALL_PROXY: 'http://127.0.0.1:9', NO_PROXY: '127.0.0.1,localhost' };
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, CODEX_HOME: home, GW_KEY: key, NO_COLOR: '1', RUST_LOG: 'error', ...offline };
  const args = [CODEX_LAUNCHER, 'exec', '--skip-git-repo-check', '--json', '--output-last-message', lastFile, '--cd', work, prompt];
  const stdout = await new Promise<string>((done, fail) => {
    const child = execFile(process.execPath, args, { cwd: work, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (error, out, err) => {
      if (error) fail(new Error(`codex exec failed (${error.message}): ${out.slice(-3000)} ${err.slice(-3000)}`));
      else done(out);
    });
    // `codex exec` reads a piped stdin to its end (as more prompt) before it starts.
    child.stdin?.end();
  });
  const events = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
  return { lastMessage: (await readFile(lastFile, 'utf8')).trim(), events };
}

/** Codex's shell tool, whichever of its names and argument shapes this version offers. */
function shellCall(names: string[], command: string): { name: string; input: Record<string, unknown> } | undefined {
  if (names.includes('exec_command')) return { name: 'exec_command', input: { cmd: command } };
  if (names.includes('shell_command')) return { name: 'shell_command', input: { command } };
  if (names.includes('shell')) return { name: 'shell', input: { command: ['bash', '-lc', command] } };
  return undefined;
}

const asText = (value: unknown) => JSON.stringify(value);

/** The request log's rows of `model`, once there are `count` of them (the log is written after the answer). */
async function loggedRows(stack: { admin(method: string, path: string): Promise<any> }, model: string, count: number): Promise<any[]> {
  let rows: any[] = [];
  await expect.poll(async () => {
    rows = (await stack.admin('GET', `/api/log/?model_name=${model}`)).body.data?.items ?? [];
    return rows.length;
  }, { timeout: 20_000, interval: 250 }).toBeGreaterThanOrEqual(count);
  return rows;
}

describe('Codex through the gateway', () => {
  it('answers a prompt and runs a shell command turn on an openai channel', async ({ stack, upstream, channel, apiKey, workdir }) => {
    await mkdir(join(workdir, 'work'), { recursive: true });
    await writeFile(join(workdir, 'work', 'notes.txt'), 'the secret word is pelican\n');
    const mock = await upstream.openai({
      text: 'Done: pelican.',
      // The model runs `cat notes.txt` once, when the shell is offered and no tool has answered yet.
      toolCall: (request: Record<string, unknown>) => {
        const names = ((request.tools ?? []) as { function?: { name?: string } }[]).map((tool) => tool.function?.name ?? '');
        const answered = (request.messages as { role?: string }[]).some((m) => m.role === 'tool');
        const call = answered ? undefined : shellCall(names, 'cat notes.txt');
        return call && { name: call.name, arguments: JSON.stringify(call.input) };
      },
    });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const run = await codex(workdir, stack.gateway.url, key, model, 'What does notes.txt say?');
    expect(run.lastMessage).toBe('Done: pelican.');
    // The command's output went back to the upstream as a tool message, the file's words in it.
    const answered = mock.requests.find((r) => (r.body.messages as { role: string }[]).some((m) => m.role === 'tool'));
    expect(answered, asText(mock.requests.map((r) => r.body.tools))).toBeDefined();
    expect(asText((answered!.body.messages as { role: string }[]).filter((m) => m.role === 'tool'))).toContain('pelican');
    expect(mock.requests[0]!.authorization).toMatch(/^Bearer sk-upstream-/);
    // Codex reported the turn's usage, which the gateway logged under the Responses door.
    const usage = run.events.findLast((event) => event.type === 'turn.completed')?.usage;
    expect(usage?.output_tokens).toBeGreaterThan(0);
    const logged = await loggedRows(stack, model, mock.requests.length);
    expect(logged.map((row) => [row.route, row.streamed, row.status])).toEqual(mock.requests.map(() => ['/v1/responses', true, 200]));
    expect(logged.reduce((sum, row) => sum + row.completion_tokens, 0)).toBe(usage.output_tokens);
  });

  it('answers a prompt and runs a shell command turn on an anthropic channel', async ({ stack, upstream, channel, apiKey, workdir }) => {
    await mkdir(join(workdir, 'work'), { recursive: true });
    await writeFile(join(workdir, 'work', 'notes.txt'), 'the secret word is heron\n');
    const mock = await upstream.anthropic({
      text: 'Done: heron.',
      // The model runs `cat notes.txt` once, when the shell is offered and no tool has answered yet.
      toolUse: (request) => {
        const names = ((request.tools ?? []) as { name?: string }[]).map((tool) => tool.name ?? '');
        const answered = asText(request.messages).includes('tool_result');
        return answered ? undefined : shellCall(names, 'cat notes.txt');
      },
    });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const run = await codex(workdir, stack.gateway.url, key, model, 'What does notes.txt say?');
    expect(run.lastMessage).toBe('Done: heron.');
    const messages = mock.requests.filter((r) => r.path === '/v1/messages');
    const answered = messages.find((r) => asText(r.body.messages).includes('tool_result'));
    expect(answered, asText(messages.map((r) => r.body.tools))).toBeDefined();
    expect(asText(answered!.body.messages)).toContain('heron');
    const usage = run.events.findLast((event) => event.type === 'turn.completed')?.usage;
    expect(usage?.output_tokens).toBeGreaterThan(0);
    const logged = await loggedRows(stack, model, messages.length);
    expect(logged.map((row) => [row.route, row.streamed, row.status])).toEqual(messages.map(() => ['/v1/responses', true, 200]));
    expect(logged.reduce((sum, row) => sum + row.completion_tokens, 0)).toBe(usage.output_tokens);
  });
});

