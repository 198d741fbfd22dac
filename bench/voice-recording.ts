/**
 * The spoken call recording's benchmark (`node -r ./scripts/register.js bench/voice-recording.ts`): the recorders
 * and the one MP3 encoder thread, as CallRecordings runs them, spooling to files in a temporary directory.
 *
 * - Throughput: 100 recorders at once, each fed a minute of speech (the fixtures, looped) in 20 ms writes as fast
 *   as the encoder goes: the real-time factor of the one encoder thread, and the CPU (every thread) per call-minute.
 * - Real time: 100 recorders written every 20 ms by one timer for 20 s, as live calls are: the main thread's
 *   CPU share and its longest event-loop stall (monitorEventLoopDelay), the encoder's largest backlog.
 * - Memory: the process's RSS with the encoder thread started and idle, then with 100 recorders open and writing;
 *   the growth per recorder.
 *
 * Prints the JSON summary on stdout, progress on stderr, and writes bench/results/<date>-voice-recording.json.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { FileHandle, open } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseWav } from '../src/voice/audio/wav';
import { BLOCK_SAMPLES, SpooledRecorder } from '../src/voice/recording/call-recorder';
import { Mp3Encoding } from '../src/voice/recording/mp3-encoding';
import { VOICE_SAMPLE_RATE } from '../src/voice/voice-format';
import { round } from './stats';
import { cpuMs, mainThreadCpuMs } from './cpu-time';

const RECORDERS = 100;
const FRAME = VOICE_SAMPLE_RATE / 50;
const MiB = 1024 * 1024;

const log = (line: string) => process.stderr.write(`[bench:voice-recording] ${line}\n`);

const fixture = (name: string) => parseWav(readFileSync(path.join(__dirname, '..', 'test', 'fixtures', 'voice', `${name}.wav`))).samples;
const VISITOR = fixture('en-long');
const AGENT = fixture('hi-question');

/** The 20 ms frame at `index` of a looped fixture, from a start that differs per recorder. */
function frameOf(source: Int16Array, start: number, index: number): Int16Array {
  const offset = (start + index * FRAME) % (source.length - FRAME);
  return source.subarray(offset, offset + FRAME);
}

interface OpenRecorder {
  recorder: SpooledRecorder;
  handle: FileHandle;
}

async function openRecorders(mp3: Mp3Encoding, directory: string): Promise<OpenRecorder[]> {
  return Promise.all(
    Array.from({ length: RECORDERS }, async (_, index) => {
      const handle = await open(path.join(directory, `${index}.mp3`), 'w');
      const recorder = new SpooledRecorder(mp3.open(handle.fd), 0, Number.POSITIVE_INFINITY, async (closing) => {
        await closing.finally(() => handle.close());
      });
      return { recorder, handle };
    }),
  );
}

const writeTick = (recorders: OpenRecorder[], tick: number) =>
  recorders.forEach(({ recorder }, index) => recorder.write(frameOf(VISITOR, index * 7919, tick), frameOf(AGENT, index * 104729, tick)));

/** Every recorder fed `seconds` of audio as fast as the encoder takes it (it catches up every second of audio). */
async function throughput(mp3: Mp3Encoding, directory: string, seconds: number) {
  const recorders = await openRecorders(mp3, directory);
  const cpu = process.cpuUsage();
  const mainBefore = mainThreadCpuMs();
  const start = performance.now();
  const ticks = seconds * 50;
  for (let tick = 0; tick < ticks; tick++) {
    writeTick(recorders, tick);
    if ((tick + 1) % 50 === 0) await Promise.all(recorders.map(({ recorder }) => recorder.spool.caughtUp()));
  }
  await Promise.all(recorders.map(({ recorder }) => recorder.close()));
  const wallSeconds = (performance.now() - start) / 1000;
  const cpuSeconds = cpuMs(cpu) / 1000;
  const callMinutes = (RECORDERS * seconds) / 60;
  return {
    recorders: RECORDERS,
    audioSecondsEach: seconds,
    wallSeconds: round(wallSeconds, 2),
    // Seconds of audio encoded per second of the one encoder thread's time.
    realTimeFactor: round((RECORDERS * seconds) / wallSeconds, 1),
    cpuSecondsPerCallMinute: round(cpuSeconds / callMinutes, 4),
    mainThreadCpuShare: round((mainThreadCpuMs() - mainBefore) / 1000 / cpuSeconds, 3),
    // The calls one encoder thread keeps up with in real time.
    callsPerEncoderThread: round((RECORDERS * seconds) / wallSeconds, 0),
  };
}

/** Every recorder written every 20 ms by one timer, as live calls are; RSS sampled while they run. */
async function realTime(mp3: Mp3Encoding, directory: string, seconds: number, rssIdle: number) {
  const recorders = await openRecorders(mp3, directory);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  const cpu = process.cpuUsage();
  const mainBefore = mainThreadCpuMs();
  let mostBacklog = 0;
  let mostRss = 0;
  let tick = 0;
  delay.enable();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      writeTick(recorders, tick++);
      for (const { recorder } of recorders) mostBacklog = Math.max(mostBacklog, recorder.spool.backlog);
      if (tick % 50 === 0) mostRss = Math.max(mostRss, process.memoryUsage().rss);
      if (tick === seconds * 50) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
  });
  delay.disable();
  await Promise.all(recorders.map(({ recorder }) => recorder.close()));
  const cpuSeconds = cpuMs(cpu) / 1000;
  return {
    recorders: RECORDERS,
    seconds,
    cpuSecondsPerCallMinute: round(cpuSeconds / ((RECORDERS * seconds) / 60), 4),
    // Of one core, for the 100 calls.
    coresUsed: round(cpuSeconds / seconds, 3),
    mainThreadCpuShare: round((mainThreadCpuMs() - mainBefore) / 1000 / cpuSeconds, 3),
    eventLoopDelayMs: {
      p50: round(delay.percentile(50) / 1e6, 1),
      p99: round(delay.percentile(99) / 1e6, 1),
      max: round(delay.max / 1e6, 1),
    },
    largestBacklogBlocks: mostBacklog,
    rssMiB: { encoderIdle: round(rssIdle / MiB, 1), with100Recorders: round(mostRss / MiB, 1) },
    rssPerRecorderMiB: round((mostRss - rssIdle) / MiB / RECORDERS, 3),
  };
}

async function main(): Promise<void> {
  const directory = mkdtempSync(path.join(os.tmpdir(), 'bench-voice-recording-'));
  const mp3 = new Mp3Encoding();
  try {
    // The encoder thread started (one short encoding), idle: the baseline for the recorders' memory.
    await mp3.encodeMono(new Int16Array(FRAME));
    const rssIdle = process.memoryUsage().rss;
    log('real time: 100 recorders, 20 s');
    const live = await realTime(mp3, directory, 20, rssIdle);
    log('throughput: 100 recorders, a minute each');
    const fast = await throughput(mp3, directory, 60);
    const date = new Date().toISOString().slice(0, 10);
    const summary = {
      date,
      node: process.version,
      // Other work on the machine inflates the timings: its load when the run started.
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAverage: os.loadavg().map((load) => round(load, 2)) },
      package: `wasm-media-encoders (LAME), ${mp3.threadCount} worker thread(s)`,
      format: `MP3, stereo, 16 kHz, 64 kbit/s CBR, ${(BLOCK_SAMPLES / VOICE_SAMPLE_RATE) * 1000} ms blocks`,
      realTime: live,
      throughput: fast,
    };
    const json = JSON.stringify(summary, null, 2);
    const file = path.resolve(__dirname, 'results', `${date}-voice-recording.json`);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${json}\n`);
    process.stdout.write(`${json}\n`);
    log(`written to ${path.relative(process.cwd(), file)}`);
  } finally {
    await mp3.onApplicationShutdown();
    rmSync(directory, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
