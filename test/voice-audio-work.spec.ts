import { concatPcm } from '../src/voice/audio/pcm';
import { Resampler } from '../src/voice/audio/resample';
import { AudioIntake, AudioWorkQueue, MAX_WAITING_MS, SLICE_MS, TURN_MS } from '../src/voice/pipeline/audio-work';
import { testPipeline } from './support/pipeline';

/**
 * The calls' audio worked through a slice at a time (AudioWorkQueue), with the event loop's turns in the test's
 * hands: the queue defers each turn to a list the test runs one by one, so that what a turn does is counted,
 * not timed.
 */
const RATE = 16_000;
const samplesOf = (ms: number) => (RATE * ms) / 1000;

/** A queue whose turns wait in `turns` until the test runs them. */
function steppedQueue() {
  const turns: (() => void)[] = [];
  const queue = new AudioWorkQueue((run) => turns.push(run));
  /** Runs the turn due; false when none is. */
  const turn = () => {
    const run = turns.shift();
    run?.();
    return run !== undefined;
  };
  return { queue, turns, turn };
}

/** An intake whose work keeps what it was given, in order; `failed` keeps the error. */
function recordingIntake(queue: AudioWorkQueue, work: (pcm: Int16Array) => void = () => undefined) {
  const pieces: Int16Array[] = [];
  const errors: unknown[] = [];
  const intake = new AudioIntake(
    RATE,
    queue,
    (pcm) => {
      work(pcm);
      pieces.push(pcm.slice());
    },
    (error) => errors.push(error),
  );
  const workedSamples = () => pieces.reduce((sum, piece) => sum + piece.length, 0);
  return { intake, pieces, errors, workedSamples };
}

/** `ms` of a ramp (sample n holds n modulo 32,768), cut into 200 ms frames as a client's burst sends them. */
function burst(ms: number, from = 0): Int16Array[] {
  const frames: Int16Array[] = [];
  for (let start = 0; start < samplesOf(ms); start += samplesOf(200)) {
    frames.push(
      Int16Array.from({ length: Math.min(samplesOf(200), samplesOf(ms) - start) }, (_, index) => (from + start + index) % 32_768),
    );
  }
  return frames;
}

/** The pieces as one buffer of bytes (compared whole: half a million samples). */
const joined = (pieces: Int16Array[]) => Buffer.from(concatPcm(pieces).buffer);

describe('AudioWorkQueue: a burst worked through a slice at a time', () => {
  it('works through nothing as the frames arrive, then at most TURN_MS of audio a turn, all of it in order', () => {
    const { queue, turns, turn } = steppedQueue();
    const { intake, pieces, workedSamples } = recordingIntake(queue);
    const frames = burst(30_000);
    for (const frame of frames) expect(intake.push(frame)).toBe(true);
    // The socket's callback only queued the burst: one turn is due, nothing worked through yet.
    expect(workedSamples()).toBe(0);
    expect(turns).toHaveLength(1);
    let count = 0;
    while (turn()) {
      count++;
      expect(queue.largestTurnMs).toBeLessThanOrEqual(TURN_MS);
    }
    expect(count).toBe(30_000 / TURN_MS);
    expect(queue.turns).toBe(count);
    expect(queue.largestTurnMs).toBe(TURN_MS);
    expect(intake.waiting).toBe(0);
    expect(joined(pieces).equals(joined(frames))).toBe(true);
  });

  it('lets each call with audio waiting take SLICE_MS in turn: a second call is not kept waiting behind a burst', () => {
    const { queue, turn } = steppedQueue();
    const first = recordingIntake(queue);
    const second = recordingIntake(queue);
    for (const frame of burst(30_000)) first.intake.push(frame);
    for (const frame of burst(1_000, 7)) second.intake.push(frame);
    turn();
    // Both were worked in the first turn, SLICE_MS at a time, TURN_MS in all.
    expect(second.workedSamples()).toBeGreaterThan(0);
    expect(first.workedSamples() + second.workedSamples()).toBe(samplesOf(TURN_MS));
    turn();
    // The second call's second is all worked through after two turns, in pieces of SLICE_MS at most.
    expect(second.workedSamples()).toBe(samplesOf(1_000));
    expect(Math.max(...second.pieces.map((piece) => piece.length))).toBeLessThanOrEqual(samplesOf(SLICE_MS));
    expect(joined(second.pieces).equals(joined(burst(1_000, 7)))).toBe(true);
    expect(first.workedSamples()).toBe(samplesOf(2 * TURN_MS - 1_000));
  });

  it('runs what waits for the audio before it (a text frame, the end) once that audio is worked through, not before', () => {
    const { queue, turn } = steppedQueue();
    const { intake, workedSamples } = recordingIntake(queue);
    const ran: number[] = [];
    intake.after(() => ran.push(workedSamples()));
    expect(ran).toEqual([0]); // nothing waited: at once
    for (const frame of burst(2_500)) intake.push(frame);
    intake.after(() => ran.push(workedSamples()));
    for (const frame of burst(1_000)) intake.push(frame); // audio after the text frame does not delay it
    turn();
    turn();
    expect(ran).toEqual([0]);
    turn();
    expect(ran).toEqual([0, samplesOf(2_500)]);
  });

  it('keeps at most MAX_WAITING_MS of a call waiting: what comes beyond is dropped and counted', () => {
    const { queue, turn } = steppedQueue();
    const { intake, workedSamples } = recordingIntake(queue);
    const frames = burst(MAX_WAITING_MS + 1_000);
    const kept = frames.filter((frame) => intake.push(frame));
    expect(kept).toHaveLength(MAX_WAITING_MS / 200);
    expect(intake.waiting).toBe(samplesOf(MAX_WAITING_MS));
    expect(intake.droppedMs).toBe(1_000);
    // Room again once some is worked through.
    turn();
    expect(intake.push(new Int16Array(samplesOf(200)))).toBe(true);
    while (turn());
    expect(workedSamples()).toBe(samplesOf(MAX_WAITING_MS + 200));
  });

  it('stops a call whose work fails, and goes on with the others', () => {
    const { queue, turn } = steppedQueue();
    const broken = recordingIntake(queue, () => {
      throw new TypeError('broken');
    });
    const sound = recordingIntake(queue);
    broken.intake.push(new Int16Array(samplesOf(400)));
    sound.intake.push(new Int16Array(samplesOf(400)));
    while (turn());
    expect(broken.errors).toEqual([new TypeError('broken')]);
    expect(broken.intake.waiting).toBe(0);
    expect(sound.workedSamples()).toBe(samplesOf(400));
  });

  it('drops what waits when the call closes, and runs what waited for it', () => {
    const { queue, turns, turn } = steppedQueue();
    const { intake, workedSamples } = recordingIntake(queue);
    for (const frame of burst(5_000)) intake.push(frame);
    let ended = false;
    intake.after(() => (ended = true));
    turn();
    intake.cancel();
    expect(ended).toBe(true);
    expect(intake.waiting).toBe(0);
    while (turn());
    expect(workedSamples()).toBe(samplesOf(TURN_MS));
    expect(turns).toHaveLength(0);
  });
});

describe("VoicePipeline: the visitor's audio at the client's own rate", () => {
  it('resamples a 48 kHz burst in the turns of the queue, not as it arrives, into the recording at 16 kHz, in order', async () => {
    const { queue, turn } = steppedQueue();
    const { pipeline, recorded, tick } = await testPipeline({ queue, inputSampleRate: 48_000 });
    const tone = Int16Array.from({ length: 48_000 }, (_, index) => Math.round(8_000 * Math.sin((2 * Math.PI * 440 * index) / 48_000)));
    for (let offset = 0; offset < tone.length; offset += 9_600) pipeline.audio(tone.subarray(offset, offset + 9_600));
    tick();
    expect(recorded).toEqual([new Int16Array(320)]); // nothing heard yet: the clock recorded silence
    while (turn());
    for (let ticks = 0; ticks < 20; ticks++) tick();
    // The same samples as the tone resampled in one piece, then silence.
    const expected = new Resampler(48_000, 16_000).process(tone);
    const visitor = concatPcm(recorded).subarray(320);
    expect(Buffer.from(visitor.slice(0, expected.length).buffer).equals(Buffer.from(expected.buffer))).toBe(true);
    expect(visitor.subarray(expected.length).every((sample) => sample === 0)).toBe(true);
    await pipeline.close();
  });
});
