import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { overloaded } from '@gateway/contracts';

export interface NumberedLine {
  line: number;
  content: string;
}

/**
 * An upload's checked lines, kept in a file of their own while its client sends them, so that
 * no database connection waits on a client's pace: the rows are written from here once the whole
 * form is read, at the disk's speed. Uploads held a pooled connection each for as long as their
 * clients took (up to BODY_TIMEOUT_MS), and four users sending slowly took every connection of
 * the pool; another user's upload waited for one until its own time ran out.
 *
 * The file is in the gateway's own spool directory (`openSpoolDir`), readable by this process's
 * user only, one line of the upload a line (`<number>\t<content>`: a JSONL line never holds a
 * newline), and removed with `remove` whatever happened.
 */
export class LineSpool {
  private readonly path: string;
  private readonly budget: SpoolBudget;
  private written = false;
  private held = 0;

  /** In `dir` (the gateway's own, `openSpoolDir`), its bytes counted in `budget`. */
  constructor(budget: SpoolBudget, dir: string) {
    this.budget = budget;
    this.path = join(dir, `gateway-upload-${randomUUID()}`);
  }

  /** Writes `lines` to the spool as they come, at the pace the disk takes them; rejects as `lines` does, or past the budget. */
  async write(lines: AsyncIterable<NumberedLine>): Promise<void> {
    this.written = true;
    await pipeline(Readable.from(this.counted(lines)), createWriteStream(this.path, { flags: 'wx', mode: 0o600 })).catch((error: unknown) => {
      if ((error as { code?: string }).code === 'ENOSPC') throw overloaded('the gateway has no disk space left for uploads now: retry later', 30);
      throw error;
    });
  }

  /** Each line as it is written to the file, its bytes taken from the budget. */
  private async *counted(lines: AsyncIterable<NumberedLine>): AsyncGenerator<string> {
    for await (const { line, content } of lines) {
      const text = `${line}\t${content}\n`;
      const bytes = Buffer.byteLength(text);
      this.budget.take(bytes);
      this.held += bytes;
      yield text;
    }
  }

  /** The lines written, in order. */
  async *lines(): AsyncGenerator<NumberedLine> {
    let pending = '';
    for await (const chunk of createReadStream(this.path, { encoding: 'utf8' }) as AsyncIterable<string>) {
      let start = 0;
      for (let end = chunk.indexOf('\n'); end !== -1; start = end + 1, end = chunk.indexOf('\n', start)) {
        const text = pending + chunk.slice(start, end);
        pending = '';
        const tab = text.indexOf('\t');
        yield { line: Number(text.slice(0, tab)), content: text.slice(tab + 1) };
      }
      pending += chunk.slice(start);
    }
  }

  async remove(): Promise<void> {
    if (this.written) await rm(this.path, { force: true });
    this.budget.give(this.held);
    this.held = 0;
  }
}

/**
 * The bytes all of a gateway's uploads may hold in their spools at once (UPLOAD_SPOOL_BYTES):
 * an upload that would pass it is refused with 503 and `Retry-After`. A slow upload holds only
 * what it has sent, so slow clients cost the others nothing until their bytes add up.
 */
export class SpoolBudget {
  private used = 0;
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  take(bytes: number): void {
    if (this.used + bytes > this.max) throw overloaded(`the gateway is receiving as many bytes of uploads as it holds at once (UPLOAD_SPOOL_BYTES): retry shortly`, 5);
    this.used += bytes;
  }

  give(bytes: number): void {
    this.used -= bytes;
  }
}

/** A gateway's spool directory's name: its process's id, and its own (a process may run two gateways, as tests do). */
const SPOOL_DIR = /^gateway-uploads-(\d+)-[0-9a-f-]+$/;

/**
 * The gateway's own directory of spools in `base` (UPLOAD_SPOOL_DIR, the system's temporary
 * directory by default): `gateway-uploads-<pid>-<uuid>`, removed by `close` when the gateway
 * stops. A gateway stopped before its uploads ended (its shutdown's deadline passed,
 * or it was killed) left its spools behind, which nothing counted: the directories of processes
 * no longer running are removed when the next gateway on the same directory starts.
 */
export async function openSpoolDir(base = tmpdir()): Promise<{ dir: string; close: () => Promise<void> }> {
  for (const name of await readdir(base).catch(() => [] as string[])) {
    const pid = Number(SPOOL_DIR.exec(name)?.[1]);
    if (pid && !isRunning(pid)) await rm(join(base, name), { recursive: true, force: true });
  }
  const dir = join(base, `gateway-uploads-${process.pid}-${randomUUID()}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  return { dir, close: () => rm(dir, { recursive: true, force: true }) };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // Another user's process (EPERM) runs too.
    return (error as { code?: string }).code === 'EPERM';
  }
}
