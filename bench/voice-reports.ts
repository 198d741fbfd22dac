/**
 * What the spoken-call benchmarks (bench/voice.ts, bench/phone.ts) share: the providers' stand-ins in a process of
 * their own, and the service's own reports read from its debug log (per turn, the milliseconds from the end of the
 * utterance to each stage, `voiceTurn`; its 20 ms clock's lateness, `voiceClock`).
 */
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TURN_STAGES } from '../src/voice/pipeline/turn-timing';
import { percentile, round } from './stats';

const ROOT = path.resolve(__dirname, '..');

/** The reply the voice benchmarks' results were measured with: one sentence, streamed in four pieces. */
export const REPLY_PIECES = ['We open ', 'at nine ', 'every morning, ', 'and close at six.'];

/** The providers' stand-ins (bench/voice-stand-ins.ts), in a process of their own; the chat streams `replyPieces`. */
export async function startStandIns(replyPieces = REPLY_PIECES): Promise<{ llmUrl: string; speechUrl: string; stop(): void }> {
  const child = fork(path.join(__dirname, 'voice-stand-ins.ts'), [JSON.stringify(replyPieces)], {
    cwd: ROOT,
    execArgv: ['-r', './scripts/register.js'],
  });
  const urls = await new Promise<{ llmUrl: string; speechUrl: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { llmUrl: string; speechUrl: string }));
    child.once('exit', (code) => reject(new Error(`the stand-ins exited with ${code}`)));
  });
  return { ...urls, stop: () => child.disconnect() };
}

/** p50, p99 and max of one stage of the turns' timings (milliseconds since the end of the utterance). */
export function stageFigures(turns: Record<string, number>[], stage: string) {
  const values = turns.map((turn) => turn[stage]).filter((value) => value !== undefined);
  return { p50: round(percentile(values, 0.5)), p99: round(percentile(values, 0.99)), max: round(Math.max(...values)) };
}

/**
 * Where the turns' time went: for each stage, p50, p90 and p99 of the milliseconds since the stage before it; and
 * the turns whose first audio took longer than `targetMs`, counted by the stage that took them the longest (what
 * made the tail: docs/benchmarks.md, "Where the tail comes from").
 */
export function stageIncrements(turns: Record<string, number>[], targetMs: number) {
  const increment = (turn: Record<string, number>, index: number) =>
    turn[TURN_STAGES[index]] - (index === 0 ? 0 : turn[TURN_STAGES[index - 1]]);
  const whole = turns.filter((turn) => TURN_STAGES.every((stage) => turn[stage] !== undefined));
  const incrementsMs = Object.fromEntries(
    TURN_STAGES.map((stage, index) => {
      const values = whole.map((turn) => increment(turn, index));
      return [stage, { p50: round(percentile(values, 0.5)), p90: round(percentile(values, 0.9)), p99: round(percentile(values, 0.99)) }];
    }),
  );
  const overTargetByLongestStage: Record<string, number> = {};
  for (const turn of whole.filter((turn) => turn.firstAudioMs > targetMs)) {
    const longest = TURN_STAGES.reduce((best, _, index) => (increment(turn, index) > increment(turn, best) ? index : best), 0);
    overTargetByLongestStage[TURN_STAGES[longest]] = (overTargetByLongestStage[TURN_STAGES[longest]] ?? 0) + 1;
  }
  return { turns: whole.length, incrementsMs, targetMs, overTargetByLongestStage };
}

export interface ClockReport {
  ticks: number;
  lateMs: { p50: number; p99: number; max: number };
}

/** The service's own reports (LOG_LEVEL=debug) since `fromByte` of its log. */
export function serviceReports(file: string, fromByte: number): { turns: Record<string, number>[]; clock: ClockReport[] } {
  const lines = fs.readFileSync(file).subarray(fromByte).toString('utf8').split('\n').filter(Boolean);
  const turns: Record<string, number>[] = [];
  const clock: ClockReport[] = [];
  for (const line of lines) {
    const entry = JSON.parse(line) as { voiceTurn?: Record<string, number>; voiceClock?: ClockReport };
    if (entry.voiceTurn) turns.push(entry.voiceTurn);
    if (entry.voiceClock) clock.push(entry.voiceClock);
  }
  return { turns, clock };
}

/** The clock's lateness over a run: the worst report's p99 and max (the agent's audio leaves at its ticks: its send jitter). */
export function clockFigures(clock: ClockReport[]) {
  return {
    worstP99: Math.max(...clock.map((report) => report.lateMs.p99)),
    max: Math.max(...clock.map((report) => report.lateMs.max)),
    reports: clock.length,
  };
}
