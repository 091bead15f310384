/**
 * Where a process's CPU went, from the `.cpuprofile` files `BENCH_PROFILE` writes: self time by
 * package (a dependency under node_modules, one of ours by its workspace, Node's own internals,
 * the garbage collector) and the functions that took most of it.
 *
 *   node bench/profile-summary.ts /tmp/prof/CPU.*.cpuprofile [top]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

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

export function summarise(file: string, top = 15): { total: number; byPackage: [string, number][]; byFunction: [string, number][] } {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const { callFrame } = nodes.get(id)!;
    if (callFrame.functionName === '(idle)') continue;
    total += us;
    const pkg = packageOf(callFrame.url, callFrame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const name = `${callFrame.functionName || '(anonymous)'} ${pkg}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { total, byPackage: sorted(byPackage), byFunction: sorted(byFunction) };
}

if (import.meta.main) {
  const files = process.argv.slice(2).filter((a) => a.endsWith('.cpuprofile'));
  const top = Number(process.argv.find((a) => /^\d+$/.test(a)) ?? 15);
  for (const file of files) {
    const { total, byPackage, byFunction } = summarise(file, top);
    const share = (us: number) => `${((100 * us) / total).toFixed(1)}%`;
    console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms busy`);
    console.table(byPackage.map(([name, us]) => ({ package: name, ms: Math.round(us / 1000), share: share(us) })));
    console.table(byFunction.map(([name, us]) => ({ function: name, ms: Math.round(us / 1000), share: share(us) })));
  }
}
