/**
 * The longest piece of main-thread work a voice burst makes, in CPU time, so that the figure does not depend on
 * what else the machine runs (bench/voice-bounds.ts measures the service's event loop from outside and inside,
 * but on a shared machine its wall-clock delays are mostly other processes'). One call's 30 s burst of speech,
 * sent as 200 ms frames, arrives in network reads of up to 2 MiB (libuv reads up to 32 × 64 KiB from a socket in
 * one callback, and ws hands over every whole frame in them at once); each read, and each turn of the audio
 * queue, is timed with process.cpuUsage() (this process runs no other thread). The pipeline is the real
 * VoicePipeline (resampler, VisitorAudio, the WebRTC VAD, TurnDetector), its recorder a stand-in.
 * - before: the socket resamples each frame and the pipeline worked it through at once (the read is one piece);
 * - now: the socket resamples each frame (the read's piece), the pipeline's queue works through the rest in turns;
 * - handoff: the socket hands over the client's PCM (`inputSampleRate`), resampling too is done in the turns.
 *
 *   node -r ./scripts/register.js bench/voice-burst-slices.ts [--rounds 5]   (writes bench/results/<date>-voice-burst-slices.json)
 */
import { writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { concatPcm, pcmFromBytes } from '../src/voice/audio/pcm';
import { resample, Resampler } from '../src/voice/audio/resample';
import { AudioWorkQueue } from '../src/voice/pipeline/audio-work';
import { testPipeline } from '../test/support/pipeline';
import { fixture } from '../test/support/voice-audio';
import { median, round } from './stats';
import { numberOption } from './options';

const READ_BYTES = 32 * 64 * 1024;
const BURST_SECONDS = 30;
const FRAME_SECONDS = 0.2;
type Build = 'before' | 'now' | 'handoff';

const cpuMs = (from: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(from);
  return (used.user + used.system) / 1000;
};

/** A pipeline as SpokenCalls makes one, its turns deferred to `turns` (run by the caller), its recorder a stand-in. */
async function pipelineFor(build: Build, rate: number, turns: (() => void)[]) {
  const queue = new AudioWorkQueue((run) => turns.push(run));
  const { pipeline } = await testPipeline({ queue, inputSampleRate: build === 'handoff' ? rate : undefined });
  return { pipeline, queue };
}

/** One burst through one build: the CPU ms of each read's piece and of each queue turn. */
async function burstThrough(build: Build, rate: number, burst: Buffer) {
  const turns: (() => void)[] = [];
  const { pipeline } = await pipelineFor(build, rate, turns);
  const sessionResampler = new Resampler(rate, 16_000);
  const frameBytes = FRAME_SECONDS * rate * 2;
  const readPieces: number[] = [];
  const turnPieces: number[] = [];
  const framesPerRead = Math.floor(READ_BYTES / frameBytes);
  for (let offset = 0; offset < burst.length; offset += framesPerRead * frameBytes) {
    const start = process.cpuUsage();
    for (let at = offset; at < Math.min(burst.length, offset + framesPerRead * frameBytes); at += frameBytes) {
      const pcm = pcmFromBytes(burst.subarray(at, at + frameBytes));
      pipeline.audio(build === 'handoff' ? pcm : sessionResampler.process(pcm));
    }
    if (build === 'before') while (turns.length > 0) turns.shift()!(); // worked through at once, as it was
    readPieces.push(cpuMs(start));
    // Between two reads of the socket, the event loop runs a turn of the queue.
    if (turns.length > 0) {
      const turn = process.cpuUsage();
      turns.shift()!();
      turnPieces.push(cpuMs(turn));
    }
  }
  while (turns.length > 0) {
    const turn = process.cpuUsage();
    turns.shift()!();
    turnPieces.push(cpuMs(turn));
  }
  await pipeline.close();
  return { readPieces, turnPieces };
}

async function main(): Promise<void> {
  const rounds = numberOption('rounds', 5);
  const speech = fixture('en-long');
  const burst16k = concatPcm(Array.from({ length: Math.ceil((BURST_SECONDS * 16_000) / speech.length) }, () => speech)).subarray(
    0,
    BURST_SECONDS * 16_000,
  );
  const results = [];
  for (const rate of [16_000, 48_000]) {
    const pcm = resample(burst16k, 16_000, rate).slice(0, BURST_SECONDS * rate);
    const burst = Buffer.from(pcm.buffer);
    for (const build of ['before', 'now', 'handoff'] as const) {
      await burstThrough(build, rate, burst); // warm-up: the filters designed, the code optimized
      const runs = [];
      for (let round = 0; round < rounds; round++) runs.push(await burstThrough(build, rate, burst));
      const longest = (pieces: number[][]) => round(median(pieces.map((list) => (list.length ? Math.max(...list) : 0))), 2);
      const total = (run: { readPieces: number[]; turnPieces: number[] }) =>
        [...run.readPieces, ...run.turnPieces].reduce((a, b) => a + b, 0);
      results.push({
        rate,
        build,
        reads: runs[0].readPieces.length,
        turns: runs[0].turnPieces.length,
        longestReadPieceCpuMs: longest(runs.map((run) => run.readPieces)),
        longestTurnCpuMs: longest(runs.map((run) => run.turnPieces)),
        totalCpuMs: round(median(runs.map(total)), 1),
      });
    }
  }
  const summary = {
    date: new Date().toISOString(),
    node: process.version,
    machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((load) => round(load, 2)) },
    burst: { seconds: BURST_SECONDS, frameMs: FRAME_SECONDS * 1000, readBytes: READ_BYTES, rounds },
    results,
  };
  const json = JSON.stringify(summary, null, 2);
  const file = path.resolve(__dirname, 'results', `${summary.date.slice(0, 10)}-voice-burst-slices.json`);
  writeFileSync(file, `${json}\n`);
  console.log(json);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
