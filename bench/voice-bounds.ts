/**
 * The bounds on the voice pipeline's real-time work (issue 41, defects 2 and 3), on the compiled service, one
 * phase per run (a fresh service each):
 * - `silent`: N voice sockets started, then silent (they send nothing; each call's recording still encodes 20 ms
 *   of both sides every tick). The service's RSS every second for `--seconds`; once the sockets close, how long
 *   until the last spool file is gone (every part encoded and stored) and the RSS then; the audio the recordings
 *   dropped, from the service's warnings.
 * - `burst`: N sockets, each sending a 30 s burst of speech at once (200 ms frames at `--rate`), the most a
 *   socket allows. The service's event-loop delay from inside (perf_hooks, bench/voice-loop-delay.cjs), the
 *   latency of GET /health/live asked every 10 ms, the voice clock's lateness and the RSS, over `--seconds` from
 *   the first frame sent.
 *
 *   node -r ./scripts/register.js bench/voice-bounds.ts --phase silent --sockets 500 --seconds 40 --label after
 *   node -r ./scripts/register.js bench/voice-bounds.ts --phase burst --sockets 60 --rate 48000 --label after
 *
 * Writes bench/results/<date>-voice-bounds-<phase>[-<rate>]-<label>.json and prints it. To compare builds, run it
 * from a checkout of each in turn (its `bench/` copied there: the service is built from the checkout it runs in).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { fixture } from '../test/support/voice-audio';
import { concatPcm } from '../src/voice/audio/pcm';
import { resample } from '../src/voice/audio/resample';
import { percentile, round } from './stats';
import { startVoiceBenchService, VoiceBenchService } from './voice-service';

const ROOT = path.resolve(__dirname, '..');
const CALLERS_NICENESS = 19;
const BURST_SECONDS = 30;
const FRAME_SECONDS = 0.2;
/** Sockets opened at once while setting up. */
const OPENING_BATCH = 25;

const option = (name: string, fallback: string) => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? process.argv[index + 1] : fallback;
};
const log = (line: string) => process.stderr.write(`[bench:voice-bounds] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Caller {
  socket: WebSocket;
  /** Close codes other than a normal close. */
  closedWith?: number;
}

async function openCaller(bench: VoiceBenchService, sampleRate: number): Promise<Caller> {
  const started = await bench.startConversation();
  const socket = new WebSocket(`${bench.service.baseUrl.replace('http', 'ws')}/conversations/${started.conversationId}/voice`, {
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const caller: Caller = { socket };
  const ready = new Promise<void>((resolve, reject) => {
    socket.once('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { type: string };
      if (message.type === 'ready') resolve();
      else reject(new Error(`expected ready, got ${message.type}`));
    });
    socket.once('close', (code) => reject(new Error(`closed with ${code} before ready`)));
  });
  socket.on('close', (code) => {
    if (code !== 1000 && code !== 1005) caller.closedWith = code;
  });
  socket.send(JSON.stringify({ type: 'start', token: started.token, sampleRate }));
  await ready;
  return caller;
}

async function openCallers(bench: VoiceBenchService, count: number, sampleRate: number): Promise<Caller[]> {
  const callers: Caller[] = [];
  for (let from = 0; from < count; from += OPENING_BATCH) {
    const batch = Array.from({ length: Math.min(OPENING_BATCH, count - from) }, () => openCaller(bench, sampleRate));
    callers.push(...(await Promise.all(batch)));
  }
  return callers;
}

/** The service's event-loop delay since the last reading (bench/voice-loop-delay.cjs answers SIGUSR2). */
async function loopDelay(pid: number, file: string): Promise<{ p50: number; p99: number; max: number }> {
  const last = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { report: number }).report : 0;
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 20) {
    await sleep(20);
    const read = fs.existsSync(file)
      ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { report: number; p50: number; p99: number; max: number })
      : undefined;
    if (read && read.report > last) return { p50: read.p50, p99: read.p99, max: read.max };
  }
  throw new Error('the service did not report its event-loop delay');
}

/**
 * GET /health/live, one request after the other (10 ms apart), from a process of its own (this one is busy
 * sending the bursts): each one's latency in ms, once `stop` is called.
 */
function probeLiveness(baseUrl: string): () => Promise<number[]> {
  const probe = spawn(process.execPath, ['-e', LIVENESS_PROBE, `${baseUrl}/health/live`], { stdio: ['pipe', 'pipe', 'inherit'] });
  const output: Buffer[] = [];
  probe.stdout.on('data', (part: Buffer) => output.push(part));
  const exited = new Promise<void>((resolve) => probe.once('exit', () => resolve()));
  return async () => {
    probe.stdin.end(); // its cue to report and stop
    await exited;
    return JSON.parse(Buffer.concat(output).toString('utf8')) as number[];
  };
}

/** The liveness probe's code: asks until its standard input closes, then prints the latencies as JSON. */
const LIVENESS_PROBE = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let running = true;
process.stdin.on('end', () => (running = false)).resume();
const ask = () => new Promise((resolve, reject) => {
  const start = performance.now();
  http.get(process.argv[1], { agent }, (response) => {
    response.resume().on('end', () => resolve(performance.now() - start));
  }).on('error', reject);
});
(async () => {
  while (running) {
    latencies.push(await ask());
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  process.stdout.write(JSON.stringify(latencies));
  agent.destroy();
})();
`;

function rssSampler(bench: VoiceBenchService, everyMs: number): () => number[] {
  const samples = [bench.service.rssMiB()];
  const timer = setInterval(() => samples.push(bench.service.rssMiB()), everyMs);
  return () => {
    clearInterval(timer);
    samples.push(bench.service.rssMiB());
    return samples;
  };
}

/** What the service logged since `fromByte`: the audio its recordings dropped, and the voice clock's lateness. */
function serviceReports(file: string, fromByte: number) {
  const lines = fs.readFileSync(file).subarray(fromByte).toString('utf8').split('\n').filter(Boolean);
  let droppedSeconds = 0;
  let keptSeconds = 0;
  let partsWithDrops = 0;
  let visitorAudioDropped = 0;
  const clockMax: number[] = [];
  const clockP99: number[] = [];
  for (const line of lines) {
    const entry = JSON.parse(line) as {
      msg?: string;
      recording?: { droppedSeconds: number; keptSeconds: number };
      voiceClock?: { lateMs: { p99: number; max: number } };
    };
    if (entry.recording) {
      partsWithDrops++;
      droppedSeconds += entry.recording.droppedSeconds;
      keptSeconds += entry.recording.keptSeconds;
    }
    if (entry.msg?.startsWith("The visitor's audio came faster")) visitorAudioDropped++;
    if (entry.voiceClock) {
      clockMax.push(entry.voiceClock.lateMs.max);
      clockP99.push(entry.voiceClock.lateMs.p99);
    }
  }
  return {
    recordingsDropped: { parts: partsWithDrops, droppedSeconds: round(droppedSeconds, 1), keptSecondsOfThoseParts: round(keptSeconds, 1) },
    callsThatDroppedVisitorAudio: visitorAudioDropped,
    clockLatenessMs: { worstP99: clockP99.length ? Math.max(...clockP99) : null, max: clockMax.length ? Math.max(...clockMax) : null },
  };
}

/** Once the sockets closed, the seconds until the last spool file is gone (every part encoded, stored, removed). */
async function spoolDrained(bench: VoiceBenchService, since = performance.now()): Promise<number | null> {
  const spool = path.join(bench.dataDir, 'voice-spool');
  for (let waited = 0; waited < 600_000; waited += 250) {
    await sleep(250);
    if (fs.readdirSync(spool).length === 0) {
      const seconds = round((performance.now() - since) / 1000, 1);
      await sleep(1_000); // the last part's log line
      return seconds;
    }
  }
  return null;
}

const figures = (values: number[]) => ({
  p50: round(percentile(values, 0.5), 1),
  p99: round(percentile(values, 0.99), 1),
  max: round(Math.max(...values), 1),
});

async function silentPhase(bench: VoiceBenchService, sockets: number, seconds: number) {
  const idle = bench.service.rssMiB();
  const fromByte = fs.statSync(bench.stdoutFile).size;
  const opening = performance.now();
  const callers = await openCallers(bench, sockets, 16_000);
  log(`${sockets} sockets open in ${round((performance.now() - opening) / 1000, 1)} s; silent for ${seconds} s`);
  const rss = rssSampler(bench, 1_000);
  await sleep(seconds * 1_000);
  const during = rss();
  const closedEarly = callers.filter((caller) => caller.closedWith !== undefined).length;
  const closing = performance.now();
  for (const { socket } of callers) socket.close(1000);
  const drainSeconds = await spoolDrained(bench, closing);
  const reports = serviceReports(bench.stdoutFile, fromByte);
  return {
    rssMiB: {
      idle,
      peak: Math.max(...during),
      atEnd: during.at(-1),
      everySecond: during,
      afterTheEncodingEnded: bench.service.rssMiB(),
    },
    secondsFromCloseToLastPartStored: drainSeconds,
    socketsClosedByTheServiceMeanwhile: closedEarly,
    ...reports,
  };
}

async function burstPhase(bench: VoiceBenchService, sockets: number, rate: number, seconds: number, delayFile: string) {
  const speech = fixture('en-long');
  const repeats = Math.ceil((BURST_SECONDS * 16_000) / speech.length);
  const burst16k = concatPcm(Array.from({ length: repeats }, () => speech)).subarray(0, BURST_SECONDS * 16_000);
  const burst = resample(burst16k, 16_000, rate).subarray(0, BURST_SECONDS * rate);
  const frame = FRAME_SECONDS * rate;
  const frames = Array.from({ length: burst.length / frame }, (_, index) =>
    Buffer.from(burst.buffer, burst.byteOffset + index * frame * 2, frame * 2),
  );
  const callers = await openCallers(bench, sockets, rate);
  log(`${sockets} sockets open at ${rate} Hz; each sends ${BURST_SECONDS} s at once`);
  await sleep(2_000);
  const idle = bench.service.rssMiB();
  await loopDelay(bench.service.pid, delayFile); // from now on
  const fromByte = fs.statSync(bench.stdoutFile).size;
  const probe = probeLiveness(bench.service.baseUrl);
  const rss = rssSampler(bench, 200);
  await sleep(500);
  for (const { socket } of callers) for (const data of frames) socket.send(data);
  await sleep(seconds * 1_000);
  const delay = await loopDelay(bench.service.pid, delayFile);
  const live = await probe();
  const memory = rss();
  const closedEarly = callers.filter((caller) => caller.closedWith !== undefined).map((caller) => caller.closedWith);
  for (const { socket } of callers) socket.close(1000);
  // A part's dropped audio is logged when it is stored.
  const drainSeconds = await spoolDrained(bench);
  const reports = serviceReports(bench.stdoutFile, fromByte);
  return {
    eventLoopDelayMs: delay,
    healthLiveMs: { requests: live.length, ...figures(live) },
    ...reports,
    rssMiB: { before: idle, peak: Math.max(...memory) },
    secondsFromCloseToLastPartStored: drainSeconds,
    socketsClosedByTheService: closedEarly,
  };
}

async function main(): Promise<void> {
  const phase = option('phase', 'silent');
  const sockets = Number(option('sockets', phase === 'silent' ? '500' : '60'));
  const seconds = Number(option('seconds', phase === 'silent' ? '40' : '15'));
  const rate = Number(option('rate', '16000'));
  const label = option('label', 'now');
  const delayDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-voice-bounds-'));
  const delayFile = path.join(delayDir, 'loop-delay.json');
  const bench = await startVoiceBenchService({
    name: 'voice-bounds',
    env: { TTS_PROVIDER: 'none', VOICE_MAX_CALLS: '10000', BENCH_LOOP_DELAY_FILE: delayFile },
    nodeArgs: ['-r', path.join(__dirname, 'voice-loop-delay.cjs')],
  });
  try {
    // The callers stand for browsers on other machines: they yield the CPU to the service and its database.
    os.setPriority(CALLERS_NICENESS);
    const measured =
      phase === 'silent' ? await silentPhase(bench, sockets, seconds) : await burstPhase(bench, sockets, rate, seconds, delayFile);
    const result = {
      date: new Date().toISOString(),
      label,
      node: process.version,
      machine: { cpus: os.cpus().length, loadAverageAtEnd: os.loadavg().map((load) => round(load, 2)) },
      options: {
        phase,
        sockets,
        seconds,
        ...(phase === 'burst' ? { rate, burstSeconds: BURST_SECONDS, frameMs: FRAME_SECONDS * 1000 } : {}),
      },
      ...measured,
    };
    const name = `${result.date.slice(0, 10)}-voice-bounds-${phase}${phase === 'burst' ? `-${rate}` : ''}-${label}.json`;
    const file = path.join(ROOT, 'bench', 'results', name);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`wrote ${path.relative(ROOT, file)}`);
  } finally {
    await bench.stop();
    fs.rmSync(delayDir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
