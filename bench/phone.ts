/**
 * Phone benchmark (`npm run bench:phone`): N phone calls at once on this machine, each dialled in through the
 * stand-in carrier (test/support/fake-twilio.ts) as Twilio makes one: the signed voice webhook, the TwiML it is
 * answered with, then the media stream (test/support/fake-twilio-media.ts), whose caller sends 20 ms of μ-law at
 * real time (a spoken question, then silence) and plays the agent's voice at real time, echoing the marks.
 * The agent answers aloud with the built-in voice (espeak-ng, in the service); the chat model and speech-to-text are
 * stand-ins that answer at once, in a process of their own (bench/voice-stand-ins.ts), as in bench/voice.ts.
 *
 * - The service runs as its own process (compiled, as `npm start` runs it) on a throwaway embedded PostgreSQL with
 *   LOG_LEVEL=debug: per turn it reports the milliseconds from the end of the caller's utterance being detected to
 *   the first media frame of the reply sent (its own share: transcription and the model are stand-ins that answer
 *   at once, the synthesis is the service's own), and its 20 ms clock's lateness (the send jitter). `stages`: each
 *   stage's own share of a turn, and the turns over the target counted by the stage that held them longest.
 * - Each caller: asks (test/fixtures/voice en-question, μ-law), keeps sending silence until the reply has played
 *   (every byte the service sent played out at the carrier), pauses 1–2 s, asks again. Client side: late frames (a
 *   frame of a reply that arrived after the carrier's playout of the reply had run dry: the caller heard a gap; a
 *   reply is told from the next by the generation in the marks' names), `clear`s (none expected: nobody interrupts).
 * - Memory: the service's RSS per call, against its idle RSS before any call (as bench/voice.ts counts it) and
 *   against its RSS after one warm-up call (the synthesis and recording threads started, as on a live instance).
 * - The codec's cost (`codecCost`): MulawCodec.decode, the call's 8 → 16 kHz resampler and MulawCodec.encode
 *   (16 → 8 kHz and μ-law) over one minute of a call's audio, in CPU µs per call-minute.
 *
 * Options: --calls 100 --seconds 40 [--tts stand-in: the speech stand-in's voice, as bench/voice.ts] [--codec-only]
 * [--sentences N: replies of N sentences, 1 to 4 (default 1, the reply the results were measured with)]
 * [--out NAME: the result's file name in bench/results, instead of <date>-phone-<calls>[-tts-stand-in].json, so that
 * a run taken to compare does not replace a committed result]. Writes the result there and prints it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CARRIER_SAMPLE_RATE, MulawCodec } from '../src/telephony/mulaw-codec';
import { Resampler } from '../src/voice/audio/resample';
import { VOICE_SAMPLE_RATE } from '../src/voice/voice-format';
import { FakeAccount, FakeCall, FakeNumber, FakeTwilio } from '../test/support/fake-twilio';
import { FRAME_BYTES, MediaStreamCall, toMulaw } from '../test/support/fake-twilio-media';
import { fixture } from '../test/support/voice-audio';
import { median, round } from './stats';
import { clockFigures, REPLY_PIECES, serviceReports, stageFigures, stageIncrements, startStandIns } from './voice-reports';
import { postJson, startVoiceBenchService, VoiceBenchService } from './voice-service';
import { numberOption, stringOption } from './options';

const ROOT = path.resolve(__dirname, '..');
const CALLERS_NICENESS = 19;
/** Issue 42's target for end of turn → first media frame, at p99: the turns over it are told apart by their longest stage. */
const FIRST_MEDIA_TARGET_MS = 50;
/** About one caller's cycle: the question (2.4 s), the end of turn, the reply, a pause of 1–2 s. */
const CYCLE_MS = 8_000;
/** The sentences after the stand-in's usual one, for --sentences (each synthesised while the one before it plays). */
const MORE_SENTENCES = [' On Sundays we open at ten.', ' The kitchen closes an hour earlier, at five.', ' You can book a table online.'];
const log = (line: string) => process.stderr.write(`[bench:phone] ${line}\n`);
/** Set once the callers hang up at the end: a stream closed before is an early close. */
let hangingUp = false;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface CallerFigures {
  replies: number;
  frames: number;
  lateFrames: number;
  clears: number;
  /** The stream ended before the run did (none expected). */
  ended: number;
}

/** How the streams that ended early were closed, by close code. */
const earlyCloses: Record<string, number> = {};

/**
 * One caller on its media stream: asks, sends silence while the reply plays, pauses, asks again. Watches the
 * carrier's playout: a tick that played less than 20 ms ran dry; the next frame the service sends is late when
 * it belongs to the same reply (the next mark the service sends is of the same generation as the last one before).
 */
class Caller {
  readonly figures: CallerFigures = { replies: 0, frames: 0, lateFrames: 0, clears: 0, ended: 0 };
  private asking = false;
  private askedAt = 0;
  private heardReply = false;
  private nextQuestionAt = Infinity;
  private lastPlayedMs = 0;
  private dry = false;
  private lastGeneration: string | undefined;
  /** Frames that came after a dry tick, waiting for the next mark to say whether they were of the same reply. */
  private afterDry: (string | undefined)[] = [];

  constructor(
    readonly call: FakeCall,
    readonly stream: MediaStreamCall,
    private readonly question: Uint8Array,
  ) {
    stream.on('message', (message?: Record<string, unknown>) => message && this.received(message));
    stream.on('tick', () => this.tick());
    stream.once('end', () => {
      this.figures.ended = 1;
      if (!hangingUp) earlyCloses[String(stream.closeCode)] = (earlyCloses[String(stream.closeCode)] ?? 0) + 1;
    });
  }

  begin(delayMs: number): void {
    this.nextQuestionAt = performance.now() + delayMs;
  }

  private received(message: Record<string, unknown>): void {
    if (message.event === 'media') {
      this.figures.frames++;
      if (this.asking) this.heardReply = true;
      if (this.dry) this.afterDry.push(this.lastGeneration);
      this.dry = false;
    } else if (message.event === 'mark') {
      const generation = String((message.mark as { name?: string }).name).split(':')[0];
      for (const before of this.afterDry.splice(0)) if (before === generation) this.figures.lateFrames++;
      this.lastGeneration = generation;
    } else if (message.event === 'clear') this.figures.clears++;
  }

  private tick(): void {
    const played = this.stream.playedMs;
    if (played - this.lastPlayedMs < 20) this.dry = true;
    this.lastPlayedMs = played;
    const now = performance.now();
    if (!this.asking && now >= this.nextQuestionAt) {
      this.stream.sayMulaw(this.question);
      this.asking = true;
      this.askedAt = now;
      this.heardReply = false;
    } else if (this.asking && this.heardReply && this.stream.bufferedMs === 0 && now - this.askedAt > 3_000) {
      this.figures.replies++;
      this.asking = false;
      this.nextQuestionAt = now + 1_000 + Math.random() * 1_000;
    }
  }
}

/** CPU µs of `work` per call-minute: the median of `rounds` rounds of `minutes` minutes each. */
function microsPerCallMinute(work: () => void, minutes: number, rounds: number): number {
  const perRound = () => {
    const start = process.cpuUsage();
    for (let index = 0; index < minutes; index++) work();
    const used = process.cpuUsage(start);
    return (used.user + used.system) / minutes;
  };
  perRound(); // warm-up: the filters are designed and the loops optimized
  return round(median(Array.from({ length: rounds }, perRound)), 0);
}

/**
 * What the phone's edge costs per call-minute (3,000 frames each way, in 20 ms frames as they come and go): the
 * caller's μ-law decoded, resampled to the pipeline's 16 kHz, and the agent's 16 kHz frames down to 8 kHz μ-law.
 */
function codecCost(rounds = 7, minutes = 5) {
  const speech = fixture('en-question');
  const frameSamples = VOICE_SAMPLE_RATE / 50;
  const agentFrames = Array.from({ length: Math.floor(speech.length / frameSamples) }, (_, index) =>
    speech.subarray(index * frameSamples, (index + 1) * frameSamples),
  );
  const caller = toMulaw(speech, VOICE_SAMPLE_RATE);
  const callerFrames = Array.from({ length: Math.floor(caller.length / FRAME_BYTES) }, (_, index) =>
    caller.subarray(index * FRAME_BYTES, (index + 1) * FRAME_BYTES),
  );
  const FRAMES_PER_MINUTE = 3_000;
  const codec = new MulawCodec();
  const up = new Resampler(CARRIER_SAMPLE_RATE, VOICE_SAMPLE_RATE);
  const decoded = callerFrames.map((frame) => codec.decode(frame));
  let sink = 0;
  const result = {
    decodeMicros: microsPerCallMinute(
      () => {
        for (let index = 0; index < FRAMES_PER_MINUTE; index++) sink += codec.decode(callerFrames[index % callerFrames.length])[0];
      },
      minutes,
      rounds,
    ),
    resampleInMicros: microsPerCallMinute(
      () => {
        for (let index = 0; index < FRAMES_PER_MINUTE; index++) sink += up.process(decoded[index % decoded.length])[0];
      },
      minutes,
      rounds,
    ),
    encodeMicros: microsPerCallMinute(
      () => {
        for (let index = 0; index < FRAMES_PER_MINUTE; index++) sink += codec.encode(agentFrames[index % agentFrames.length])[0];
      },
      minutes,
      rounds,
    ),
  };
  if (Number.isNaN(sink)) throw new Error('unreachable');
  return {
    microsPerCallMinute: { ...result, total: result.decodeMicros + result.resampleInMicros + result.encodeMicros },
    note: 'CPU µs per call-minute, both directions whole (3,000 frames in, 3,000 out), median of rounds',
    rounds,
    minutesPerRound: minutes,
  };
}

/** A carrier account and number on the stand-in, connected to the agent with POST /phone-numbers. */
async function connectNumber(bench: VoiceBenchService, twilio: FakeTwilio): Promise<{ account: FakeAccount; number: FakeNumber }> {
  const account = twilio.addAccount();
  const number = twilio.addNumber(account);
  await postJson(
    `${bench.service.baseUrl}/phone-numbers`,
    { 'X-Api-Key': bench.apiKey },
    {
      number: number.phoneNumber,
      provider: 'twilio',
      twilioAccountSid: account.sid,
      twilioAuthToken: account.authToken,
      agentId: bench.agentId,
    },
  );
  return { account, number };
}

/** A caller dials the number: the webhook, the TwiML, then the media stream. */
async function dialIn(twilio: FakeTwilio, number: FakeNumber, index: number): Promise<{ call: FakeCall; stream: MediaStreamCall }> {
  const { call, answer } = await twilio.dialIn(number, `+9198${String(index).padStart(8, '0')}`);
  if (answer.status !== 200) throw new Error(`the voice webhook answered ${answer.status}: ${answer.body}`);
  return { call, stream: await twilio.connect(call) };
}

/** One call that asks once and is answered, then hangs up: the service's threads (synthesis, recording) started. */
async function warmUp(twilio: FakeTwilio, number: FakeNumber, question: Uint8Array): Promise<void> {
  const { call, stream } = await dialIn(twilio, number, 9_999_999);
  stream.sayMulaw(question);
  await stream.message((message) => message.event === 'media');
  while (stream.bufferedMs > 0) await sleep(100);
  await stream.hangUp();
  await twilio.ended(call);
}

async function main(): Promise<void> {
  const calls = numberOption('calls', 100);
  const seconds = numberOption('seconds', 40);
  // --tts stand-in: the speech stand-in's tone instead of the built-in voice, as bench/voice.ts runs (what the phone's edge adds to it).
  const tts = stringOption('tts') === 'stand-in' ? 'stand-in' : 'builtin';
  const codec = codecCost();
  log(`codec: ${JSON.stringify(codec.microsPerCallMinute)} µs per call-minute`);
  if (process.argv.includes('--codec-only')) return void console.log(JSON.stringify(codec, null, 2));
  const load = os.loadavg().map((value) => round(value));
  const sentences = Math.min(1 + MORE_SENTENCES.length, Math.max(1, numberOption('sentences', 1)));
  const standIns = await startStandIns([...REPLY_PIECES, ...MORE_SENTENCES.slice(0, sentences - 1)]);
  const twilio = await FakeTwilio.start();
  let bench: VoiceBenchService | undefined;
  const callers: Caller[] = [];
  try {
    bench = await startVoiceBenchService({
      name: 'phone',
      env: {
        LLM_BASE_URL: standIns.llmUrl,
        LLM_API_KEY: 'bench',
        ...(tts === 'stand-in'
          ? { TTS_PROVIDER: 'openai', TTS_BASE_URL: standIns.speechUrl, TTS_API_KEY: 'bench' }
          : { TTS_PROVIDER: 'builtin' }),
        STT_PROVIDER: 'openai',
        STT_BASE_URL: standIns.speechUrl,
        STT_API_KEY: 'bench',
        TWILIO_API_BASE_URL: twilio.url,
        PHONE_MAX_ACTIVE_CALLS: String(calls + 1),
        VOICE_MAX_CALLS: String(Math.max(100, calls + 1)),
      },
    });
    const { service, stdoutFile } = bench;
    const { number } = await connectNumber(bench, twilio);
    const question = toMulaw(fixture('en-question'), VOICE_SAMPLE_RATE);
    const idleRss = service.rssMiB();
    await warmUp(twilio, number, question);
    await sleep(2_000); // the warm-up call stored
    const warmRss = service.rssMiB();
    log(`service idle: ${idleRss} MiB, after one call: ${warmRss} MiB; dialling ${calls} calls`);
    // The callers stand for the carrier's side, elsewhere: they yield the CPU to the service, its database and the
    // providers' stand-ins (started before this, at normal priority), whose work is what is measured.
    os.setPriority(CALLERS_NICENESS);
    for (let index = 0; index < calls; index++) {
      const { call, stream } = await dialIn(twilio, number, index);
      callers.push(new Caller(call, stream, question));
    }
    // Calls that began at different moments: their first questions spread over one caller's cycle (each stream keeps
    // its own 20 ms clock, from its own start, as Twilio's streams do).
    callers.forEach((caller, index) => caller.begin((index * CYCLE_MS) / calls));
    await sleep(CYCLE_MS + 3_000); // every call's first turns, before measuring
    const fromByte = fs.statSync(stdoutFile).size;
    const cpuBefore = service.cpuSeconds();
    const rss: number[] = [];
    const sampler = setInterval(() => rss.push(service.rssMiB()), 1_000);
    const before = callers.map((caller) => ({ ...caller.figures }));
    await sleep(seconds * 1_000);
    clearInterval(sampler);
    const cpu = service.cpuSeconds() - cpuBefore;
    const reports = serviceReports(stdoutFile, fromByte);
    const totals = callers.reduce(
      (sum, caller, index) => ({
        replies: sum.replies + caller.figures.replies - before[index].replies,
        frames: sum.frames + caller.figures.frames - before[index].frames,
        lateFrames: sum.lateFrames + caller.figures.lateFrames - before[index].lateFrames,
        clears: sum.clears + caller.figures.clears - before[index].clears,
        ended: sum.ended + caller.figures.ended,
      }),
      { replies: 0, frames: 0, lateFrames: 0, clears: 0, ended: 0 },
    );
    const peak = Math.max(...rss);
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      loadAverageBefore: load,
      options: { calls, seconds, callsBeganOverMs: CYCLE_MS, tts, sentences },
      turns: reports.turns.length,
      endOfTurnToFirstMediaMs: stageFigures(reports.turns, 'firstAudioMs'),
      // The way there: transcript in, message accepted, the reply's first text, its first synthesised audio.
      endOfTurnToMs: Object.fromEntries(
        ['heardMs', 'acceptedMs', 'firstTextMs', 'firstSpeechMs'].map((stage) => [stage, stageFigures(reports.turns, stage)]),
      ),
      // Each stage's own share (since the one before), and which stage held the turns that missed the target.
      stages: stageIncrements(reports.turns, FIRST_MEDIA_TARGET_MS),
      clockLatenessMs: clockFigures(reports.clock),
      client: { ...totals, earlyCloses },
      rssMiB: { idle: idleRss, afterOneCall: warmRss, peak, mean: round(rss.reduce((a, b) => a + b, 0) / rss.length) },
      rssPerCallMiB: round((peak - idleRss) / calls),
      rssPerCallAfterWarmUpMiB: round((peak - warmRss) / calls),
      cpuSecondsPerCallMinute: round(cpu / calls / (seconds / 60), 3),
      cpuCores: round(cpu / seconds),
      codec,
    };
    const name = stringOption(
      'out',
      `${new Date().toISOString().slice(0, 10)}-phone-${calls}${tts === 'builtin' ? '' : '-tts-stand-in'}.json`,
    );
    const file = path.join(ROOT, 'bench', 'results', path.basename(name));
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    log(`wrote ${path.relative(ROOT, file)}`);
  } finally {
    hangingUp = true;
    // The callers hang up, and the carrier's `completed` callbacks are answered, before the service stops.
    await Promise.all(callers.map((caller) => caller.stream.hangUp().then(() => twilio.ended(caller.call).catch(() => undefined))));
    await bench?.stop();
    await twilio.close();
    standIns.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
