import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineSpool, openSpoolDir, SpoolBudget, type NumberedLine } from './line-spool.ts';

async function* from(lines: NumberedLine[], failAfter?: number) {
  for (const [i, line] of lines.entries()) {
    if (i === failAfter) throw new Error('line refused');
    yield line;
  }
}

const collect = async (lines: AsyncIterable<NumberedLine>) => {
  const all: NumberedLine[] = [];
  for await (const line of lines) all.push(line);
  return all;
};

describe('an upload spooled to disk', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'spool-test-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('gives back every line as written, tabs, \\r and long lines included, and leaves nothing once removed', async () => {
    const budget = new SpoolBudget(Infinity);
    const lines = [
      { line: 1, content: '{"a":"tab\\there"}' },
      { line: 3, content: '{ "b" :\t1 ,\r "c": "ü€😀" }' },
      { line: 4, content: `{"long":"${'x'.repeat(3 * 1024 * 1024)}"}` },
      { line: 9, content: '{}' },
    ];
    const spool = new LineSpool(budget, dir);
    await spool.write(from(lines));
    expect(await collect(spool.lines())).toEqual(lines);
    await spool.remove();
    expect(await readdir(dir)).toEqual([]);
  });

  it('counts its bytes against the gateway\'s budget: past it, a 503 with Retry-After; given back when removed', async () => {
    const budget = new SpoolBudget(100);
    const first = new LineSpool(budget, dir);
    await first.write(from([{ line: 1, content: `{"a":"${'x'.repeat(80)}"}` }]));
    const second = new LineSpool(budget, dir);
    await expect(second.write(from([{ line: 1, content: `{"b":"${'y'.repeat(30)}"}` }]))).rejects.toMatchObject({ status: 503, retryAfter: 5 });
    await second.remove();
    await first.remove();
    const third = new LineSpool(budget, dir);
    await third.write(from([{ line: 1, content: `{"c":"${'z'.repeat(80)}"}` }]));
    await third.remove();
    expect(await readdir(dir)).toEqual([]);
  });

  it("keeps a gateway's spools in a directory of its own, removed when it stops; a stopped process's left behind are removed by the next to start", async () => {
    const base = await mkdtemp(join(tmpdir(), 'spool-dirs-'));
    try {
      // A killed gateway's (no process runs with that id: above the kernel's largest) and a running one's.
      await mkdir(join(base, 'gateway-uploads-4194305-0a1b'), { recursive: true });
      await writeFile(join(base, 'gateway-uploads-4194305-0a1b', 'gateway-upload-x'), 'left behind');
      await mkdir(join(base, `gateway-uploads-${process.ppid}-0c1d`));
      await writeFile(join(base, 'unrelated'), 'kept');
      const opened = await openSpoolDir(base);
      expect((await readdir(base)).sort()).toEqual([`gateway-uploads-${process.ppid}-0c1d`, opened.dir.slice(base.length + 1), 'unrelated'].sort());
      const spool = new LineSpool(new SpoolBudget(Infinity), opened.dir);
      await spool.write(from([{ line: 1, content: '{}' }]));
      await opened.close();
      expect((await readdir(base)).sort()).toEqual([`gateway-uploads-${process.ppid}-0c1d`, 'unrelated']);
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it('rejects as its lines do, and leaves nothing once removed', async () => {
    const spool = new LineSpool(new SpoolBudget(Infinity), dir);
    await expect(spool.write(from([{ line: 1, content: '{}' }, { line: 2, content: '{}' }], 1))).rejects.toThrow('line refused');
    await spool.remove();
    expect(await readdir(dir)).toEqual([]);
  });
});
