/**
 * Claude Code (the `@anthropic-ai/claude-code` CLI, `claude -p … --output-format json`) through
 * the gateway's Messages door, as a user runs it: `ANTHROPIC_BASE_URL` at the gateway,
 * `ANTHROPIC_API_KEY` the gateway key, non-essential traffic off, a home of its own. On an
 * anthropic channel and on an openai channel, with a turn where it calls its Read tool and sends
 * the file's contents back.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect } from 'vitest';
import { stackTest } from '@gateway/testkit/fixtures';

/**
 * The package's own launcher of its platform binary: it works whether or not npm ran the
 * package's postinstall (which links the binary over `bin/claude.exe`), so a fresh `npm ci` that
 * skips install scripts runs the same CLI.
 */
const CLAUDE_LAUNCHER = resolve(import.meta.dirname, '../node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs');

const it = stackTest({
  workers: ['completion-worker'],
  env: { REQUEST_TIMEOUT_MS: '30000' },
  channelDefaults: { timeout_ms: 10_000 },
}).extend('workdir', async ({}, { onCleanup }): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'claude-code-'));
  onCleanup(() => rm(dir, { recursive: true, force: true }));
  return dir;
});

let seq = 0;
const uniqueModel = () => `claude-code-model-${++seq}`;

interface ClaudeResult {
  type: string;
  is_error: boolean;
  result: string;
}

/** Runs `claude -p` in `dir` against the gateway, with an environment of its own (none of this process's Anthropic settings). */
function claude(dir: string, gateway: string, key: string, model: string, prompt: string, extra: string[] = []): Promise<ClaudeResult> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    ANTHROPIC_BASE_URL: gateway,
    ANTHROPIC_API_KEY: key,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    CI: 'true',
  };
  return new Promise((done, fail) => {
    execFile(process.execPath, [CLAUDE_LAUNCHER, '-p', prompt, '--output-format', 'json', '--model', model, ...extra], { cwd: dir, env, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      try {
        done(JSON.parse(line) as ClaudeResult);
      } catch {
        fail(new Error(`claude gave no JSON result (${error?.message ?? 'exit 0'}): ${stdout.slice(-2000)} ${stderr.slice(-2000)}`));
      }
    });
  });
}

/** The tool_result blocks the upstream received, of either format, as text. */
const lastText = (value: unknown) => JSON.stringify(value);

describe('Claude Code through the gateway', () => {
  it('answers a prompt and runs a Read tool turn on an anthropic channel', async ({ stack, upstream, channel, apiKey, workdir }) => {
    await writeFile(join(workdir, 'notes.txt'), 'the secret word is pelican\n');
    const mock = await upstream.anthropic({
      text: 'Done: pelican.',
      // The model reads the file once, when Read is offered and no tool has answered yet.
      toolUse: (request) => {
        const tools = (request.tools ?? []) as { name?: string }[];
        const answered = lastText(request.messages).includes('tool_result');
        return tools.some((tool) => tool.name === 'Read') && !answered ? { name: 'Read', input: { file_path: join(workdir, 'notes.txt') } } : undefined;
      },
    });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const result = await claude(workdir, stack.gateway.url, key, model, 'What does notes.txt say?', ['--allowedTools', 'Read']);
    expect(result).toMatchObject({ type: 'result', is_error: false, result: 'Done: pelican.' });
    const messages = mock.requests.filter((r) => r.path === '/v1/messages');
    expect(messages.length).toBeGreaterThanOrEqual(2);
    // Read's result went back to the upstream as a tool_result, the file's words in it.
    const answered = messages.find((r) => lastText(r.body.messages).includes('tool_result'))!;
    expect(lastText(answered.body.messages)).toContain('pelican');
    // Claude Code's own headers and cache marks reached the anthropic channel.
    expect(answered.anthropicVersion).toBe('2023-06-01');
    expect(answered.anthropicBeta).toContain('claude-code-20250219');
    expect(lastText(answered.body)).toContain('cache_control');
  });

  it('answers a prompt and runs a Read tool turn on an openai channel', async ({ stack, upstream, channel, apiKey, workdir }) => {
    await writeFile(join(workdir, 'notes.txt'), 'the secret word is heron\n');
    const mock = await upstream.openai({
      text: 'Done: heron.',
      // The model reads the file once, when Read is offered and no tool has answered yet.
      toolCall: (request: Record<string, unknown>) => {
        const tools = (request.tools ?? []) as { function?: { name?: string } }[];
        const answered = (request.messages as { role?: string }[]).some((m) => m.role === 'tool');
        return tools.some((tool) => tool.function?.name === 'Read') && !answered ? { name: 'Read', arguments: JSON.stringify({ file_path: join(workdir, 'notes.txt') }) } : undefined;
      },
    });
    const model = uniqueModel();
    await channel(mock, [model]);
    const { key } = await apiKey();
    const result = await claude(workdir, stack.gateway.url, key, model, 'What does notes.txt say?', ['--allowedTools', 'Read']);
    expect(result).toMatchObject({ type: 'result', is_error: false, result: 'Done: heron.' });
    const answered = mock.requests.find((r) => (r.body.messages as { role: string }[]).some((m) => m.role === 'tool'));
    expect(answered).toBeDefined();
    expect(lastText(answered!.body.messages)).toContain('heron');
  });
});
