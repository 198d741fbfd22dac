/**
 * Voice benchmark (`npm run bench:voice`): N spoken calls at once on this machine, each streaming 20 ms frames
 * of speech and silence at real time while the agent answers aloud, with voice activity detection and the MP3
 * recording on. The three providers are local stand-ins that answer at once (an OpenAI-compatible chat,
 * transcription and speech server in this process), so that what is measured is the service's own work.
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
 * Options: --calls 100 --seconds 60. Writes bench/results/<date>-voice.json and prints a summary.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { loadConfig } from '../src/config/config';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { startFakeLlm } from '../test/fake-llm';
import { fixture } from '../test/support/voice-audio';
import { buildService, RunningServer, startService } from './servers';
import { percentile, round } from './stats';

const ROOT = path.resolve(__dirname, '..');
const FRAME = 320;
const option = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const log = (line: string) => process.stderr.write(`[bench:voice] ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** 20 s of a 220 Hz tone at 24 kHz, made once: the speech stand-in answers a slice of it at once. */
const TONE = Buffer.alloc(20 * 24_000 * 2);
for (let index = 0; index < TONE.length / 2; index++)
  TONE.writeInt16LE(Math.round(6_000 * Math.sin((2 * Math.PI * 220 * index) / 24_000)), index * 2);

/** Transcription and speech stand-ins (OpenAI's wire format): a fixed transcript, and a second of tone per 15 characters. */
async function startSpeechServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      if (request.url === '/v1/audio/transcriptions') {
        return void response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ text: 'When do you open?' }));
      }
      const { input } = JSON.parse(Buffer.concat(parts).toString('utf8')) as { input: string };
      const bytes = Math.min(TONE.length, Math.round((input.length / 15) * 24_000) * 2);
      response.writeHead(200, { 'Content-Type': 'audio/pcm' }).end(TONE.subarray(0, bytes));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function post<T>(url: string, headers: Record<string, string>, body: object): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return (await response.json()) as T;
}

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

async function openCaller(baseUrl: string, apiKey: string, agentId: number, question: Int16Array): Promise<Caller> {
  const started = await post<{ conversationId: string; token: string }>(
    `${baseUrl}/agents/${agentId}/conversations`,
    { 'X-Api-Key': apiKey },
    {},
  );
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

/** The service's own reports (LOG_LEVEL=debug) since `fromByte` of its log. */
function serviceReports(file: string, fromByte: number) {
  const lines = fs.readFileSync(file).subarray(fromByte).toString('utf8').split('\n').filter(Boolean);
  const firstAudioMs: number[] = [];
  const clock: { ticks: number; lateMs: { p50: number; p99: number; max: number } }[] = [];
  for (const line of lines) {
    const entry = JSON.parse(line) as { voiceTurn?: { firstAudioMs: number }; voiceClock?: (typeof clock)[number] };
    if (entry.voiceTurn) firstAudioMs.push(entry.voiceTurn.firstAudioMs);
    if (entry.voiceClock) clock.push(entry.voiceClock);
  }
  return { firstAudioMs, clock };
}

async function main(): Promise<void> {
  const calls = option('calls', 100);
  const seconds = option('seconds', 60);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-voice-'));
  const postgres = await startThrowawayPostgres();
  const llm = await startFakeLlm();
  llm.behave({ kind: 'stream', pieces: ['We open ', 'at nine ', 'every morning, ', 'and close at six.'] });
  const speech = await startSpeechServer();
  let service: RunningServer | undefined;
  const stdoutFile = path.join(work, 'service.out');
  try {
    const main = buildService();
    await runMigrations(postgres.url, loadConfig({}));
    const env = { DATABASE_URL: postgres.url, LOG_LEVEL: 'debug' };
    const created = execFileSync(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', 'account:create', '--name', 'Bench'], {
      cwd: ROOT,
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    });
    const { apiKey } = JSON.parse(created.trim().split('\n').at(-1)!) as { apiKey: string };
    service = await startService({
      name: 'service',
      script: main,
      env: {
        ...env,
        DATA_DIR: path.join(work, 'service-data'),
        LLM_BASE_URL: llm.url,
        LLM_API_KEY: 'bench',
        TTS_PROVIDER: 'openai',
        TTS_BASE_URL: speech.url,
        STT_PROVIDER: 'openai',
        STT_BASE_URL: speech.url,
        RATE_LIMIT: '0',
        WIDGET_RATE_LIMIT: '1000000',
        CONVERSATION_MAX_ACTIVE_PER_ACCOUNT: '100000',
        CONVERSATION_MAX_REPLIES_PER_ACCOUNT: '100000',
        CONVERSATION_MAX_REPLIES_PER_ADDRESS: '100000',
      },
      readyPath: '/health',
      logFile: path.join(work, 'service.log'),
      stdoutFile,
    });
    const agent = await post<{ id: number }>(
      `${service.baseUrl}/agents`,
      { 'X-Api-Key': apiKey },
      { name: 'Bench', language: 'en-IN', model: 'bench' },
    );
    const question = fixture('en-question');
    const idleRss = service.rssMiB();
    log(`service idle: ${idleRss} MiB; opening ${calls} calls`);
    const callers: Caller[] = [];
    for (let index = 0; index < calls; index++) callers.push(await openCaller(service.baseUrl, apiKey, agent.id, question));

    // One ticker for every caller, against absolute deadlines (as the service's own clock).
    let due = performance.now();
    let running = true;
    const ticker = (async () => {
      while (running) {
        const now = performance.now();
        for (const caller of callers) caller.tick(now);
        due += 20;
        await sleep(Math.max(0, due - performance.now()));
      }
    })();
    callers.forEach((caller, index) => caller.begin((index * 2_000) / calls)); // staggered over two seconds
    await sleep(5_000); // the first turns, before measuring
    const fromByte = fs.statSync(stdoutFile).size;
    const cpuBefore = service.cpuSeconds();
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(service!.rssMiB()), 1_000);
    const before = callers.map((caller) => ({ ...caller.figures, errors: caller.figures.errors.length }));
    await sleep(seconds * 1_000);
    clearInterval(sampler);
    const cpu = service.cpuSeconds() - cpuBefore;
    running = false;
    await ticker;
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
    const clockP99 = Math.max(...reports.clock.map((report) => report.lateMs.p99));
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      options: { calls, seconds },
      turns: reports.firstAudioMs.length,
      endOfTurnToFirstAudioMs: {
        p50: round(percentile(reports.firstAudioMs, 0.5)),
        p99: round(percentile(reports.firstAudioMs, 0.99)),
        max: round(Math.max(...reports.firstAudioMs)),
      },
      clockLatenessMs: {
        worstP99: clockP99,
        max: Math.max(...reports.clock.map((report) => report.lateMs.max)),
        reports: reports.clock.length,
      },
      client: totals,
      rssMiB: { idle: idleRss, peak: Math.max(...rss), mean: round(rss.reduce((a, b) => a + b, 0) / rss.length) },
      rssPerCallMiB: round((Math.max(...rss) - idleRss) / calls),
      cpuSecondsPerCallMinute: round(cpu / calls / (seconds / 60), 3),
      cpuCores: round(cpu / seconds),
    };
    const file = path.join(ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-voice.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`wrote ${path.relative(ROOT, file)}`);
    for (const caller of callers) (caller as unknown as { socket: WebSocket }).socket.close();
  } finally {
    await service?.stop();
    await speech.close();
    await llm.close();
    await postgres.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
