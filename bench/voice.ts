/**
 * Voice benchmark (`npm run bench:voice`): N spoken calls at once on this machine, each streaming 20 ms frames
 * of speech and silence at real time while the agent answers aloud, with voice activity detection and the MP3
 * recording on. The three providers are local stand-ins that answer at once (an OpenAI-compatible chat,
 * transcription and speech server, bench/voice-stand-ins.ts, in a process of their own so that the callers'
 * work does not delay their answers), so that what is measured is the service's own work.
 *
 * - The service runs as its own process (compiled, as `npm start` runs it) on a throwaway embedded PostgreSQL,
 *   with LOG_LEVEL=debug so that it reports, from inside, the lateness of its 20 ms clock (the agent's audio
 *   leaves at its ticks: this is the send jitter) and, per turn, its time from the end of the visitor's
 *   utterance being detected to the first frame of the reply sent.
 * - Each client: a conversation, its voice socket, then in a loop: a spoken question (test/fixtures/voice), the
 *   microphone left open on silence until the reply has played, a pause. Client side: late frames (a frame of
 *   the agent's voice that arrived after the moment it should have started playing, playback starting with the
 *   reply's first frame) and errors.
 * - Memory: the service's RSS before the calls and during them; CPU: the service's CPU seconds per call-minute.
 *
 * - Capacity (`--offered N`, N > calls): the service runs with VOICE_MAX_CALLS = calls and, once the calls are open,
 *   N − calls more clients keep knocking (each a conversation of its own, its socket tried again after the
 *   refusal's Retry-After): every knock must be refused before the upgrade with 503 and Retry-After while the
 *   admitted calls keep their figures and the service's memory stays flat.
 *
 * Options: --calls 100 --seconds 60 [--offered 200] [--burst: the calls begin within two seconds, so that their turns come in bursts] [--profile DIR: the service writes a V8 CPU profile into DIR when it stops]. Writes bench/results/<date>-voice.json and prints a summary.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { fixture } from '../test/support/voice-audio';
import { round } from './stats';
import { clockFigures, serviceReports, stageFigures, startStandIns } from './voice-reports';
import { startVoiceBenchService, VoiceBenchService } from './voice-service';
import { numberOption } from './options';

const ROOT = path.resolve(__dirname, '..');
const FRAME = 320;
const CALLERS_NICENESS = 19;
/** About one caller's cycle: the question (2.4 s), the end of turn, the reply (3.3 s of speech) and a pause of 1–2 s. */
const CYCLE_MS = 8_000;
/** The callers' frames go out in this many groups, 20 / PHASES ms apart (see the ticker). */
const PHASES = 4;
const log = (line: string) => process.stderr.write(`[bench:voice] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ClientFigures {
  replies: number;
  frames: number;
  lateFrames: number;
  errors: string[];
}

/**
 * One caller: asks, keeps the microphone open on silence while the reply plays, pauses, asks again; frames are
 * sent by the shared ticker (`tick`), one per 20 ms.
 */
class Caller {
  readonly figures: ClientFigures = { replies: 0, frames: 0, lateFrames: 0, errors: [] };
  private speech: Int16Array | undefined;
  private offset = 0;
  private replyStart: number | undefined;
  private replyFrames = 0;
  private quietUntil = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly question: Int16Array,
  ) {
    socket.on('message', (data: Buffer, binary: boolean) => {
      const now = performance.now();
      if (binary) {
        this.figures.frames++;
        this.replyStart ??= now;
        // Playback starts with the reply's first frame: frame n plays n × 20 ms later, and must have come by then.
        if (now > this.replyStart + this.replyFrames * 20 + 1) this.figures.lateFrames++;
        this.replyFrames++;
        return;
      }
      const message = JSON.parse(data.toString()) as { type: string; message?: string };
      if (message.type === 'error') this.figures.errors.push(message.message ?? 'error');
      if (message.type === 'reply.done') {
        this.figures.replies++;
        this.replyStart = undefined;
        this.replyFrames = 0;
        this.quietUntil = now + 1_000 + Math.random() * 1_000;
      }
    });
    socket.on('close', (code) => code !== 1000 && code !== 1001 && this.figures.errors.push(`closed ${code}`));
  }

  /** The next 20 ms from the microphone: the question's, or silence. */
  tick(now: number): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    if (!this.speech && this.replyStart === undefined && now >= this.quietUntil && this.quietUntil > 0) {
      this.speech = this.question;
      this.offset = 0;
      this.quietUntil = Infinity;
    }
    const frame = new Int16Array(FRAME);
    if (this.speech) {
      frame.set(this.speech.subarray(this.offset, this.offset + FRAME));
      this.offset += FRAME;
      if (this.offset >= this.speech.length) this.speech = undefined;
    }
    this.socket.send(Buffer.from(frame.buffer));
  }

  begin(delayMs: number): void {
    this.quietUntil = performance.now() + delayMs;
  }
}

async function openCaller(baseUrl: string, started: { conversationId: string; token: string }, question: Int16Array): Promise<Caller> {
  const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/conversations/${started.conversationId}/voice`, {
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const ready = new Promise<void>((resolve) => socket.once('message', () => resolve()));
  socket.send(JSON.stringify({ type: 'start', token: started.token, sampleRate: 16_000 }));
  await ready;
  return new Caller(socket, question);
}

interface Knocks {
  refused: number;
  /** Refusals that said when to come back (`Retry-After`). */
  told: number;
  statuses: Record<string, number>;
  /** Sockets that were upgraded past VOICE_MAX_CALLS: none expected. */
  admitted: number;
}

/**
 * A client beyond the instance's capacity: tries its socket, and again after the refusal's Retry-After (5 s when
 * it says none), until `running()` is false.
 */
async function knock(baseUrl: string, started: { conversationId: string }, knocks: Knocks, running: () => boolean): Promise<void> {
  while (running()) {
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/conversations/${started.conversationId}/voice`, {
      perMessageDeflate: false,
    });
    const retryAfter = await new Promise<number>((resolve) => {
      socket.once('unexpected-response', (_request, response) => {
        knocks.refused++;
        knocks.statuses[response.statusCode ?? 0] = (knocks.statuses[response.statusCode ?? 0] ?? 0) + 1;
        const seconds = Number(response.headers['retry-after']);
        if (seconds > 0) knocks.told++;
        response.resume();
        resolve(seconds > 0 ? seconds : 5);
      });
      socket.once('open', () => {
        knocks.admitted++;
        socket.close();
        resolve(5);
      });
      socket.once('error', () => resolve(5));
    });
    await sleep(retryAfter * 1_000);
  }
}

async function main(): Promise<void> {
  const calls = numberOption('calls', 100);
  const seconds = numberOption('seconds', 60);
  const offered = Math.max(calls, numberOption('offered', calls));
  const profileIndex = process.argv.indexOf('--profile');
  const profileDir = profileIndex > 0 ? path.resolve(process.argv[profileIndex + 1]) : undefined;
  const standIns = await startStandIns();
  let bench: VoiceBenchService | undefined;
  try {
    bench = await startVoiceBenchService({
      name: 'voice',
      env: {
        LLM_BASE_URL: standIns.llmUrl,
        LLM_API_KEY: 'bench',
        TTS_PROVIDER: 'openai',
        TTS_BASE_URL: standIns.speechUrl,
        STT_PROVIDER: 'openai',
        STT_BASE_URL: standIns.speechUrl,
        ...(offered > calls ? { VOICE_MAX_CALLS: String(calls) } : {}),
      },
      nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    const { service, stdoutFile } = bench;
    const question = fixture('en-question');
    const idleRss = service.rssMiB();
    log(`service idle: ${idleRss} MiB; opening ${calls} calls`);
    // The callers stand for browsers on other machines: they yield the CPU to the service, its database and the
    // providers' stand-ins (started before this, at normal priority), whose work is what is measured.
    os.setPriority(CALLERS_NICENESS);
    const callers: Caller[] = [];
    for (let index = 0; index < calls; index++) callers.push(await openCaller(service.baseUrl, await bench.startConversation(), question));

    // One ticker for every caller, against absolute deadlines (as the service's own clock). Browsers on other
    // machines each keep a clock of their own, so their frames arrive spread over the 20 ms rather than all at once:
    // the callers send in PHASES groups, one every 20 / PHASES ms, each caller once per 20 ms.
    let due = performance.now();
    let phase = 0;
    let running = true;
    const ticker = (async () => {
      while (running) {
        const now = performance.now();
        for (let index = phase; index < callers.length; index += PHASES) callers[index].tick(now);
        phase = (phase + 1) % PHASES;
        due += 20 / PHASES;
        await sleep(Math.max(0, due - performance.now()));
      }
    })();
    // Calls that began at different moments, as a day's calls do: their first questions spread over one caller's
    // cycle, so that turns come at a steady rate (started within two seconds, as before, they came in bursts of
    // them all every cycle: `--burst`).
    const staggerMs = process.argv.includes('--burst') ? 2_000 : CYCLE_MS;
    callers.forEach((caller, index) => caller.begin((index * staggerMs) / calls));
    const knocks: Knocks = { refused: 0, told: 0, statuses: {}, admitted: 0 };
    const knockers: Promise<void>[] = [];
    for (let index = calls; index < offered; index++) {
      knockers.push(knock(service.baseUrl, await bench.startConversation(), knocks, () => running));
    }
    await sleep(staggerMs + 3_000); // every call's first turns, before measuring
    const fromByte = fs.statSync(stdoutFile).size;
    const cpuBefore = service.cpuSeconds();
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(service.rssMiB()), 1_000);
    const before = callers.map((caller) => ({ ...caller.figures, errors: caller.figures.errors.length }));
    await sleep(seconds * 1_000);
    clearInterval(sampler);
    const cpu = service.cpuSeconds() - cpuBefore;
    running = false;
    await ticker;
    await Promise.all(knockers);
    const reports = serviceReports(stdoutFile, fromByte);
    const totals = callers.reduce(
      (sum, caller, index) => ({
        replies: sum.replies + caller.figures.replies - before[index].replies,
        frames: sum.frames + caller.figures.frames - before[index].frames,
        lateFrames: sum.lateFrames + caller.figures.lateFrames - before[index].lateFrames,
        errors: sum.errors + caller.figures.errors.length - before[index].errors,
      }),
      { replies: 0, frames: 0, lateFrames: 0, errors: 0 },
    );
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      options: { calls, offered, seconds, callsBeganOverMs: staggerMs, callerPhases: PHASES },
      turns: reports.turns.length,
      endOfTurnToFirstAudioMs: stageFigures(reports.turns, 'firstAudioMs'),
      // The way there: transcript in, message accepted, the reply's first text, its first synthesised audio.
      endOfTurnToMs: Object.fromEntries(
        ['heardMs', 'acceptedMs', 'firstTextMs', 'firstSpeechMs'].map((stage) => [stage, stageFigures(reports.turns, stage)]),
      ),
      clockLatenessMs: clockFigures(reports.clock),
      client: totals,
      ...(offered > calls ? { overCapacity: { voiceMaxCalls: calls, knockers: offered - calls, ...knocks } } : {}),
      rssMiB: { idle: idleRss, peak: Math.max(...rss), mean: round(rss.reduce((a, b) => a + b, 0) / rss.length) },
      rssPerCallMiB: round((Math.max(...rss) - idleRss) / calls),
      cpuSecondsPerCallMinute: round(cpu / calls / (seconds / 60), 3),
      cpuCores: round(cpu / seconds),
    };
    const name = offered > calls ? `voice-capacity-${offered}` : 'voice';
    const file = path.join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-${name}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`wrote ${path.relative(ROOT, file)}`);
    for (const caller of callers) (caller as unknown as { socket: WebSocket }).socket.close();
  } finally {
    await bench?.stop();
    standIns.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
