/**
 * Where a process's CPU went, from the `.cpuprofile` files `BENCH_PROFILE` writes: self time by
 * kind of work (a sample counts for the nearest frame up its stack that names one: the socket
 * writes, the Redis client, BullMQ, the HTTP server or client, …), by package (a dependency
 * under node_modules, one of ours by its workspace, Node's own internals, the garbage
 * collector) and the functions that took most of it.
 *
 *   npx node bench/profile-summary.ts /tmp/prof/CPU.*.cpuprofile [top]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

type Frame = ProfileNode['callFrame'];

/** Kinds of work, each known by a frame on the stack: the first that matches, leaf first, names it. */
const KINDS: [string, (frame: Frame) => boolean][] = [
  ['socket writes (the write system calls)', (f) => /^(writeBuffer|writev|writeUtf8String|writeString|writeLatin1String)$/.test(f.functionName)],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['loading modules (the start)', (f) => /compileSourceTextModule|wrapSafe|compileForInternalLoader|internalModuleStat|readFileUtf8|__require|defaultLoadSync|getPackageScopeConfig/.test(f.functionName)],
  ['Redis client (ioredis)', (f) => /ioredis|redis-parser|standard-as-callback/.test(f.url)],
  ['BullMQ', (f) => /bullmq|msgpackr/.test(f.url)],
  ['HTTP server (Fastify, Node http)', (f) => /fastify|find-my-way|secure-json-parse|_http_|avvio/.test(f.url)],
  ['HTTP client (undici)', (f) => /undici/.test(f.url)],
  ['validation (zod)', (f) => /\/zod\//.test(f.url)],
  ['logging (pino)', (f) => /pino|sonic-boom/.test(f.url)],
  ['metrics (prom-client)', (f) => /prom-client/.test(f.url)],
  ['tracing API', (f) => /opentelemetry/.test(f.url)],
  ['our code', (f) => /\/(packages|services)\//.test(f.url) && !f.url.includes('node_modules')],
];

/** The package a frame's script belongs to. */
function packageOf(url: string, functionName: string): string {
  if (functionName === '(garbage collector)') return '(garbage collector)';
  if (functionName === '(program)' || functionName === '(idle)') return functionName;
  if (!url) return '(native)';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  const ours = /\/(packages|services)\/([^/]+)\//.exec(url);
  if (ours) return `${ours[1]}/${ours[2]}`;
  if (url.startsWith('node:')) return 'node (internals)';
  return url;
}

export function summarise(file: string, top = 15): { total: number; byKind: [string, number][]; byPackage: [string, number][]; byFunction: [string, number][] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byKind = new Map<string, number>();
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const { callFrame } = nodes.get(id)!;
    if (callFrame.functionName === '(idle)') continue;
    total += us;
    const kind = kindOf(id, nodes, parents);
    byKind.set(kind, (byKind.get(kind) ?? 0) + us);
    const pkg = packageOf(callFrame.url, callFrame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const name = `${callFrame.functionName || '(anonymous)'} ${pkg}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { total, byKind: sorted(byKind), byPackage: sorted(byPackage), byFunction: sorted(byFunction) };
}

function kindOf(id: number, nodes: Map<number, ProfileNode>, parents: Map<number, number>): string {
  for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
    const frame = nodes.get(at)!.callFrame;
    const kind = KINDS.find(([, names]) => names(frame));
    if (kind) return kind[0];
  }
  return 'other (Node internals, natives)';
}

if (import.meta.main) {
  const files = process.argv.slice(2).filter((a) => a.endsWith('.cpuprofile'));
  const top = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 15);
  for (const file of files) {
    const { total, byKind, byPackage, byFunction } = summarise(file, top);
    const share = (us: number) => `${((100 * us) / total).toFixed(1)}%`;
    console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms busy`);
    console.table(byKind.map(([kind, us]) => ({ kind, ms: Math.round(us / 1000), share: share(us) })));
    console.table(byPackage.map(([name, us]) => ({ package: name, ms: Math.round(us / 1000), share: share(us) })));
    console.table(byFunction.map(([name, us]) => ({ function: name, ms: Math.round(us / 1000), share: share(us) })));
  }
}
