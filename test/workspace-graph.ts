/**
 * The workspaces and what each one's shipped code imports of the others, read from the files
 * themselves (TypeScript's own import scanner: static, `export … from` and dynamic imports), for
 * workspace-imports.test.ts. Test files (`*.test.ts`) are left out: a package's tests may stand
 * on the test kit, its shipped code may not.
 */
import { globSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface Workspace {
  /** `@gateway/queue`. */
  name: string;
  /** Its folder, relative to the repository (`packages/queue`). */
  dir: string;
  /** Its package.json's `dependencies` (not the development ones). */
  dependencies: string[];
}

/** One import in shipped code of another workspace. */
export interface WorkspaceImport {
  from: string;
  to: string;
  /** The importing file, relative to the repository, and what it wrote. */
  file: string;
  specifier: string;
}

export function readWorkspaces(root: string): Workspace[] {
  const { workspaces } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] };
  return workspaces
    .flatMap((pattern) => globSync(`${pattern}/package.json`, { cwd: root }))
    .map((file) => {
      const json = JSON.parse(readFileSync(join(root, file), 'utf8')) as { name: string; dependencies?: Record<string, string> };
      return { name: json.name, dir: dirname(file), dependencies: Object.keys(json.dependencies ?? {}) };
    });
}

/** The `.ts` files under each workspace's `src/` that are not tests. */
export function shippedFiles(root: string, workspace: Workspace): string[] {
  return globSync(`${workspace.dir}/src/**/*.ts`, { cwd: root }).filter((file) => !file.endsWith('.test.ts'));
}

function workspaceOf(specifier: string, file: string, root: string, workspaces: Workspace[]): Workspace | undefined {
  if (specifier.startsWith('.')) {
    const target = relative(root, resolve(root, dirname(file), specifier));
    return workspaces.find((w) => target === w.dir || target.startsWith(w.dir + sep));
  }
  return workspaces.find((w) => specifier === w.name || specifier.startsWith(`${w.name}/`));
}

/** Every import, in shipped code, of one workspace by another (by name or by a relative path across). */
export function workspaceImports(root: string, workspaces: Workspace[]): WorkspaceImport[] {
  return workspaces.flatMap((from) =>
    shippedFiles(root, from).flatMap((file) =>
      ts
        .preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
        .importedFiles.map(({ fileName: specifier }) => ({ specifier, to: workspaceOf(specifier, file, root, workspaces) }))
        .filter(({ to }) => to !== undefined && to.name !== from.name)
        .map(({ specifier, to }) => ({ from: from.name, to: to!.name, file, specifier })),
    ),
  );
}

/** Edges as a map from a workspace to those it uses. */
export function graphOf(edges: Iterable<[from: string, to: string]>): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const [from, to] of edges) graph.set(from, (graph.get(from) ?? new Set()).add(to));
  return graph;
}

/** A loop in `graph` as the path around it (`a → b → a` is `['a', 'b', 'a']`), or undefined when there is none. */
export function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    const at = path.indexOf(node);
    if (at >= 0) return [...path.slice(at), node];
    if (done.has(node)) return undefined;
    path.push(node);
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    done.add(node);
    return undefined;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}
