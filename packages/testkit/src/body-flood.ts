import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface FloodAnswer { status: number; retryAfter?: string; error?: string }

export interface Flood {
  /** Fields to send bodies with: `{ url, key, model, count, bytes, chunked }`, or a `body` of its own. */
  run(flood: { url: string; key: string; model: string; count: number; bytes?: number; chunked?: boolean; body?: string }): Promise<FloodAnswer[]>;
  /** The process's slow upstream (OpenAI completions, 2 s a reply, the body read and dropped). */
  upstream: string;
  close(): void;
}

/**
 * A load generator of large bodies, and the slow upstream that serves them, in a process of its
 * own (body-flood-process.ts): the test process, which times another tenant's requests, then
 * spends no event loop on writing a gigabyte or on parsing what the upstream receives.
 */
export async function startBodyFlood(): Promise<Flood> {
  const child = fork(fileURLToPath(new URL('./body-flood-process.ts', import.meta.url)), { stdio: 'ignore' });
  const upstream = await new Promise<string>((resolve) => child.once('message', (m: { upstream: string }) => resolve(m.upstream)));
  return {
    upstream,
    run: (flood) => new Promise((resolve) => {
      child.once('message', (m: { answers: FloodAnswer[] }) => resolve(m.answers));
      child.send({ chunked: false, bytes: 0, ...flood });
    }),
    close: () => child.kill(),
  };
}
