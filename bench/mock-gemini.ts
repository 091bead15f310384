/** Starts bench/mock-gemini-process.ts and talks to it over IPC. */
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot, type MockGeminiBehaviour, type MockGeminiStats } from '@gateway/testkit';

export interface MockGeminiProcess {
  child: ChildProcess;
  url: string;
  apiKey: string;
  stats(): Promise<MockGeminiStats>;
  reset(): Promise<MockGeminiStats>;
  set(behaviour: Partial<MockGeminiBehaviour>): Promise<MockGeminiStats>;
  stop(): void;
}

export function startMockGeminiProcess(behaviour: Partial<MockGeminiBehaviour> = {}): Promise<MockGeminiProcess> {
  const child = fork(join(repoRoot, 'bench/mock-gemini-process.ts'), [JSON.stringify(behaviour)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  let next = 0;
  const waiting = new Map<number, (stats: MockGeminiStats) => void>();
  const call = (cmd: string, extra: object = {}) =>
    new Promise<MockGeminiStats>((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      child.send({ ...extra, cmd, id });
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`mock Gemini upstream exited with ${code}`)));
    child.on('message', (m: { type: string; url?: string; apiKey?: string; id?: number; stats?: MockGeminiStats }) => {
      if (m.type === 'ready') {
        resolve({
          child,
          url: m.url!,
          apiKey: m.apiKey!,
          stats: () => call('stats'),
          reset: () => call('reset'),
          set: (b) => call('set', { behaviour: b }),
          stop: () => child.kill(),
        });
      } else if (m.type === 'reply') {
        waiting.get(m.id!)?.(m.stats!);
        waiting.delete(m.id!);
      }
    });
  });
}
