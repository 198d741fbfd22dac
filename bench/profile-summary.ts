/**
 * Where a server's CPU goes per request, from V8 CPU profiles (`node --cpu-prof`, as bench/ab.ts --profile
 * writes them): self time grouped by package (a package under node_modules, a file of the service, a Node
 * internal module, V8's own work such as the garbage collector), and by function.
 *
 *   node -r ./scripts/register.js bench/profile-summary.ts --profile DIR [--scenario get-by-id] [--top 40] [--by package|file|function|line] [--inclusive]
 *
 * DIR is what `bench/ab.ts --profile DIR` wrote: DIR/a and DIR/b (one .cpuprofile each) and DIR/windows.json,
 * the measured windows of each scenario (monotonic clock, the profile's own) with the responses each counted.
 * Only the samples inside the windows of the scenario (every scenario without --scenario) count, so start-up,
 * warm-up and the other server's turns are left out, and the figures are µs of the main thread per response,
 * for a and b side by side, sorted by the difference. --inclusive: the time of the samples with the group anywhere on
 * their stack (a function with what it calls), instead of self time.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One measured window of bench/ab.ts: µs on the monotonic clock, and the responses completed inside it. */
export interface MeasuredWindow {
  scenario: string;
  server: string;
  startUs: number;
  endUs: number;
  requests: number;
}

/** package: a package, or a folder of the service; file; function: a function of a file; line: the same with its line (one build's). */
type Grouping = 'package' | 'file' | 'function' | 'line';

/** The package a script belongs to: `express`, `@nestjs/core`, `app src/common/responds.js`, `node:internal/http`… */
function packageOf(url: string, by: Grouping): string {
  if (!url) return '(V8/native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const [first, second] = url.slice(modules + 'node_modules/'.length).split('/');
    return first.startsWith('@') ? `${first}/${second}` : first;
  }
  if (url.startsWith('node:')) return by === 'package' ? url.split('/').slice(0, 2).join('/') : url;
  const source = /\/(dist\/)?(src\/.*)$/.exec(url);
  if (source) return by === 'package' ? `app ${path.dirname(source[2])}` : `app ${source[2]}`;
  return url;
}

function groupOf(frame: CallFrame, by: Grouping): string {
  // (garbage collector), (program), (idle), (root): V8's own.
  if (frame.functionName.startsWith('(')) return frame.functionName;
  const where = packageOf(frame.url, by);
  if (by === 'package' || by === 'file') return where;
  const name = `${frame.functionName || '(anonymous)'} ${where}`;
  return by === 'line' ? `${name}:${frame.lineNumber + 1}` : name;
}

/**
 * Time per group inside the windows, in µs: self time, or with `inclusive` the time of the samples with the group
 * anywhere on their stack (each sample counted once per group, so recursion does not count twice).
 */
function timePerGroup(profile: CpuProfile, windows: readonly MeasuredWindow[], by: Grouping, inclusive: boolean): Map<string, number> {
  const groups = new Map<number, string>(profile.nodes.map((node) => [node.id, groupOf(node.callFrame, by)]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const stackGroups = (id: number): Set<string> => {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) seen.add(groups.get(at)!);
    return seen;
  };
  const totals = new Map<string, number>();
  let time = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    time += profile.timeDeltas[index];
    // A sample stands for the interval until the next one.
    const interval = index + 1 < profile.timeDeltas.length ? profile.timeDeltas[index + 1] : 0;
    if (!windows.some((window) => time >= window.startUs && time < window.endUs)) continue;
    for (const group of inclusive ? stackGroups(profile.samples[index]) : [groups.get(profile.samples[index])!]) {
      totals.set(group, (totals.get(group) ?? 0) + interval);
    }
  }
  return totals;
}

function readProfile(dir: string): CpuProfile {
  const files = fs.readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'));
  if (files.length !== 1) throw new Error(`${dir}: expected one .cpuprofile, found ${files.length}`);
  return JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8')) as CpuProfile;
}

const arg = (name: string, fallback?: string) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : fallback;
};

function main(): void {
  const dir = arg('profile');
  if (!dir) throw new Error('--profile DIR (as written by bench/ab.ts --profile DIR)');
  const scenario = arg('scenario');
  const top = Number(arg('top', '40'));
  const by = arg('by', 'package') as Grouping;
  const inclusive = process.argv.includes('--inclusive');
  const allWindows = JSON.parse(fs.readFileSync(path.join(dir, 'windows.json'), 'utf8')) as MeasuredWindow[];
  const perServer = ['a', 'b'].map((server) => {
    const windows = allWindows.filter((window) => window.server === server && (!scenario || window.scenario === scenario));
    const requests = windows.reduce((sum, window) => sum + window.requests, 0);
    const totals = timePerGroup(readProfile(path.join(dir, server)), windows, by, inclusive);
    const perRequest = new Map([...totals].map(([group, us]) => [group, us / requests]));
    return { server, requests, perRequest };
  });
  const [a, b] = perServer;
  const names = new Set([...a.perRequest.keys(), ...b.perRequest.keys()]);
  const rows = [...names].map((name) => ({ name, a: a.perRequest.get(name) ?? 0, b: b.perRequest.get(name) ?? 0 }));
  const busy = (side: 'a' | 'b') => rows.filter((row) => row.name !== '(idle)').reduce((sum, row) => sum + row[side], 0);
  const out = (line: string) => process.stdout.write(`${line}\n`);
  out(
    `${scenario ?? 'every scenario'}, by ${by}: µs of the main thread per response (${inclusive ? 'inclusive' : 'self'} time; idle left out)`,
  );
  out(
    `responses: a ${a.requests}, b ${b.requests}; busy a ${busy('a').toFixed(1)} µs, b ${busy('b').toFixed(1)} µs, b - a ${(busy('b') - busy('a')).toFixed(1)} µs`,
  );
  out(`${'b - a'.padStart(8)} ${'a'.padStart(8)} ${'b'.padStart(8)}  group`);
  rows
    .filter((row) => row.name !== '(idle)')
    .sort((x, y) => Math.abs(y.b - y.a) - Math.abs(x.b - x.a))
    .slice(0, top)
    .forEach((row) =>
      out(`${(row.b - row.a).toFixed(2).padStart(8)} ${row.a.toFixed(2).padStart(8)} ${row.b.toFixed(2).padStart(8)}  ${row.name}`),
    );
}

main();
