/**
 * The memory of reading knowledge files, A/B of two compiled builds in one run (issue 41, defect 1):
 *   node -r ./scripts/register.js bench/knowledge-files-memory.ts --a dist/kf-a --b dist/kf-b [--a-commit X --b-commit Y] [--rounds 1]
 * Each build is a tsc output directory (`npx tsc -p tsconfig.build.json --outDir dist/kf-b`; for an older commit, in a
 * `git worktree` of it with a `node_modules` link). For each file, each build's FileReader (a fresh one: its own
 * reading process) reads a small text file (the process started), then the file, with the default limits (60 s,
 * 512 MiB): how long it took, the outcome, the reading process's peak resident memory (VmHWM, sampled every 10 ms
 * until the outcome, and once more then) and what it held a second later (or that it was replaced). The builds take
 * turns, A first in odd rounds. Writes bench/results/<date>-knowledge-files-memory.json; progress on stderr.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FIXTURES, inflatingPdf, policyPage, renamedPartBombDocx, textPdf } from '../scripts/knowledge-fixtures';
import type { FileReader as FileReaderClass } from '../src/knowledge-bases/file-reader';
import type { FileKind } from '../src/knowledge-bases/file-type';
import { round } from './stats';

const ROOT = path.resolve(__dirname, '..');
const LIMITS = { timeoutMs: 60_000, memoryMb: 512 };
const arg = (name: string, fallback?: string) => {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? process.argv[index + 1] : fallback;
};
const log = (line: string) => process.stderr.write(`[bench:knowledge-files-memory] ${line}\n`);

interface Case {
  name: string;
  kind: FileKind;
  file: Buffer;
}

/** A process's field from /proc/<pid>/status, in MiB; undefined once it has ended. */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return undefined;
  }
}

/** The reading processes this process has started (their command line names the host), newest last. */
function hosts(): number[] {
  return fs
    .readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return parent === process.pid && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('file-reading-host');
      } catch {
        return false;
      }
    })
    .sort((a, b) => a - b);
}

async function measure(build: string, { kind, file }: Case) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a build chosen at run time
  const { FileReader } = require(path.resolve(build, 'src', 'knowledge-bases', 'file-reader.js')) as {
    FileReader: new () => FileReaderClass;
  };
  const reader = new FileReader();
  try {
    await reader.read([Buffer.from('A few words, to start the reading process.')], 'text', LIMITS);
    const [host] = hosts();
    const idleMiB = statusMiB(host, 'VmRSS')!;
    let peakMiB = 0;
    let done = false;
    const started = performance.now();
    const reading = reader.read([file], kind, LIMITS).finally(() => (done = true));
    while (!done) {
      peakMiB = Math.max(peakMiB, statusMiB(host, 'VmHWM') ?? 0);
      await sleep(10);
    }
    const outcome = await reading;
    const ms = Math.round(performance.now() - started);
    peakMiB = Math.max(peakMiB, statusMiB(host, 'VmHWM') ?? 0);
    await sleep(1_000);
    const heldMiB = statusMiB(host, 'VmRSS');
    return {
      outcome: 'reading' in outcome ? `read: ${outcome.reading.content.length} characters` : outcome.error,
      ms,
      idleMiB: round(idleMiB),
      peakMiB: round(peakMiB),
      heldAfterMiB: heldMiB === undefined ? 'replaced' : round(heldMiB),
    };
  } finally {
    reader.beforeApplicationShutdown();
    // The next reading starts with no process of this one left.
    while (hosts().length) await sleep(20);
  }
}

async function main(): Promise<void> {
  const builds = { a: arg('a')!, b: arg('b')! };
  if (!builds.a || !builds.b) throw new Error('--a and --b: two tsc output directories');
  // What each build is (a commit), for the report.
  const labels = { a: arg('a-commit'), b: arg('b-commit') };
  const rounds = Number(arg('rounds', '1'));
  const handbook = await textPdf(Array.from({ length: 100 }, (_, page) => policyPage(page + 1, 8)));
  const cases: Case[] = [
    { name: 'faq.docx (a Word document)', kind: 'docx', file: fs.readFileSync(path.join(FIXTURES, 'faq.docx')) },
    { name: 'a 100-page text PDF', kind: 'pdf', file: handbook },
    { name: 'bomb.docx: 512 MiB of XML in word/document.xml', kind: 'docx', file: fs.readFileSync(path.join(FIXTURES, 'bomb.docx')) },
    { name: 'a DOCX whose main part is word/doc.bin, 1,000 MiB', kind: 'docx', file: renamedPartBombDocx(1000) },
    { name: 'a PDF whose content stream inflates to 1 GiB', kind: 'pdf', file: inflatingPdf(1024) },
  ];
  const results: Record<string, { file: string; bytes: number; a: unknown[]; b: unknown[] }> = {};
  for (const testCase of cases) {
    const entry = (results[testCase.name] = { file: testCase.name, bytes: testCase.file.length, a: [] as unknown[], b: [] as unknown[] });
    for (let index = 0; index < rounds; index++) {
      for (const which of index % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
        const result = await measure(builds[which], testCase);
        entry[which].push(result);
        log(`${which}: ${testCase.name}: ${JSON.stringify(result)}`);
      }
    }
  }
  const report = {
    benchmark: 'knowledge-files-memory',
    date: new Date().toISOString(),
    commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
    builds: { a: { dir: builds.a, commit: labels.a }, b: { dir: builds.b, commit: labels.b } },
    limits: LIMITS,
    machine: { node: process.version, cpus: os.cpus().length, memoryGiB: round(os.totalmem() / 2 ** 30, 1), loadAverage: os.loadavg() },
    results: Object.values(results),
  };
  const file = path.join(ROOT, 'bench', 'results', `${report.date.slice(0, 10)}-knowledge-files-memory.json`);
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`wrote ${path.relative(ROOT, file)}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
