/**
 * The workspaces as a model of the architecture: what ships imports no test kit or local-run
 * code, and no workspace reaches itself through others, neither in its imports nor in its
 * package.json. Test files may import the test kit (a development dependency); the kit imports
 * the packages it tests, as BullMQ's tests import BullMQ.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findCycle, graphOf, readWorkspaces, workspaceImports } from './workspace-graph.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
/** What only tests, `npm start` and the benchmarks use: never imported by what ships. */
const NOT_SHIPPED = ['@gateway/testkit', '@gateway/local-stack'];

const workspaces = readWorkspaces(root);
const imports = workspaceImports(root, workspaces);
const shipped = (name: string) => !NOT_SHIPPED.includes(name);
const describeLoop = (cycle: string[] | undefined) => cycle?.join(' → ');

describe('the workspaces', () => {
  it('are all read, the test kit and the local stack among them', () => {
    expect(workspaces.length).toBeGreaterThan(15);
    expect(workspaces.map((w) => w.name)).toEqual(expect.arrayContaining(['@gateway/gateway', '@gateway/queue', ...NOT_SHIPPED]));
    expect(imports.some((i) => i.from === '@gateway/gateway' && i.to === '@gateway/queue')).toBe(true);
  });

  it('import one another without a loop', () => {
    const cycle = findCycle(graphOf(imports.map((i): [string, string] => [i.from, i.to])));
    expect(describeLoop(cycle), 'a loop among the workspaces\' imports').toBeUndefined();
  });

  it('import neither the test kit nor the local stack from code that ships', () => {
    const wrong = imports.filter((i) => shipped(i.from) && !shipped(i.to)).map((i) => `${i.file}: ${i.specifier}`);
    expect(wrong).toEqual([]);
  });

  it('list the test kit and the local stack as development dependencies only, and their dependencies without a loop', () => {
    const wrong = workspaces.filter((w) => shipped(w.name)).flatMap((w) => w.dependencies.filter((d) => !shipped(d)).map((d) => `${w.dir}: ${d}`));
    expect(wrong).toEqual([]);
    const names = new Set(workspaces.map((w) => w.name));
    const cycle = findCycle(graphOf(workspaces.flatMap((w) => w.dependencies.filter((d) => names.has(d)).map((d): [string, string] => [w.name, d]))));
    expect(describeLoop(cycle), 'a loop among package.json dependencies').toBeUndefined();
  });

  it('that ship list in their dependencies every workspace their code imports', () => {
    const undeclared = imports
      .filter((i) => shipped(i.from) && !workspaces.find((w) => w.name === i.from)!.dependencies.includes(i.to))
      .map((i) => `${i.file}: ${i.specifier}`);
    expect(undeclared).toEqual([]);
  });
});

describe('findCycle', () => {
  it('names the loop it finds, and finds none in a graph without one', () => {
    expect(findCycle(graphOf([['queue', 'config'], ['queue', 'testkit'], ['testkit', 'queue']]))).toEqual(['queue', 'testkit', 'queue']);
    expect(findCycle(graphOf([['a', 'b'], ['b', 'c'], ['c', 'a']]))).toEqual(['a', 'b', 'c', 'a']);
    expect(findCycle(graphOf([['gateway', 'queue'], ['gateway', 'config'], ['queue', 'config']]))).toBeUndefined();
  });
});
