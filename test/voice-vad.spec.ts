import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { rmsDbfs } from '../src/voice/audio/pcm';
import { parseWav } from '../src/voice/audio/wav';
import { VoiceActivity } from '../src/voice/vad/fvad';
import { TurnDetector, TurnEvent } from '../src/voice/vad/turn-detector';
import { FRAME_SAMPLES } from '../src/voice/voice-format';

type Fixture = 'en-question' | 'hi-question' | 'en-long' | 'noise-1s';

const fixture = (name: Fixture): Int16Array => parseWav(readFileSync(path.join(__dirname, 'fixtures', 'voice', `${name}.wav`))).samples;

/** A signal as the 20 ms frames a microphone streams (a partial last frame is left out). */
const framesOf = (samples: Int16Array): Int16Array[] =>
  Array.from({ length: Math.floor(samples.length / FRAME_SAMPLES) }, (_, index) =>
    samples.subarray(index * FRAME_SAMPLES, (index + 1) * FRAME_SAMPLES),
  );

const silence = (frames: number): Int16Array[] => Array.from({ length: frames }, () => new Int16Array(FRAME_SAMPLES));

/** The defaults of the detector, in frames. */
const START = 5;
const BARGE_IN = 15;
const PRE_ROLL = 15;
const TAIL = 5;
const END_OF_TURN_MS = 700;
const END = END_OF_TURN_MS / 20;

/** The real VAD, with a note of each decision it took (so that the test can count frames from them). */
class NotedVad {
  readonly decisions: boolean[] = [];
  constructor(private readonly vad: VoiceActivity) {}
  isSpeech(frame: Int16Array): boolean {
    const speech = this.vad.isSpeech(frame);
    this.decisions.push(speech);
    return speech;
  }
}

/** Decisions from a script: '#' speech, '.' silence. */
class ScriptedVad {
  private next = 0;
  constructor(private readonly script: string) {}
  isSpeech(): boolean {
    if (this.next >= this.script.length) throw new Error('The script ran out');
    return this.script[this.next++] === '#';
  }
}

/** Every event with the index of the frame that caused it. */
function run(detector: TurnDetector, frames: Int16Array[]): Array<TurnEvent & { frame: number }> {
  return frames.flatMap((frame, index) => detector.push(frame).map((event) => ({ ...event, frame: index })));
}

/** Frame n holds the value n in every sample, so that an utterance's audio says which frames it kept. */
const numbered = (count: number): Int16Array[] => Array.from({ length: count }, (_, index) => new Int16Array(FRAME_SAMPLES).fill(index));
const frameNumbers = (audio: Int16Array): number[] => framesOf(audio).map((frame) => frame[0]);
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, index) => from + index);

/** Where the detector's speech starts: the first run of START voiced frames (a shorter run before it was a blip). */
const speechStart = (decisions: boolean[]): number =>
  decisions.findIndex((_, index) => decisions.slice(index, index + START).every(Boolean));

/** The first and last frame above the VAD's energy floor: where the synthesizer's speech is, measured apart from the VAD. */
function speechSpan(samples: Int16Array): { first: number; last: number } {
  const loud = framesOf(samples).map((frame) => rmsDbfs(frame) > -50);
  return { first: loud.indexOf(true), last: loud.lastIndexOf(true) };
}

let vad: VoiceActivity;
beforeAll(async () => {
  vad = await VoiceActivity.create();
});
afterAll(() => vad.free());

describe('VoiceActivity (libfvad, mode 3, energy floor)', () => {
  it.each(['en-question', 'hi-question', 'en-long'] as const)('finds the speech in %s and none in its silent padding', (name) => {
    const samples = fixture(name);
    const decisions = framesOf(samples).map((frame) => vad.isSpeech(frame));
    const padding = 0.3 * 16_000; // the silence the fixture script puts before and after the speech
    const trailingPadding = Math.ceil((samples.length - padding) / FRAME_SAMPLES); // the first frame wholly in it

    expect(decisions.slice(0, padding / FRAME_SAMPLES)).not.toContain(true);
    expect(decisions.slice(trailingPadding)).not.toContain(true);
    expect(decisions.filter(Boolean).length).toBeGreaterThan((0.6 * (samples.length - 2 * padding)) / FRAME_SAMPLES);
  });

  it('hears no speech in faint noise or digital silence', () => {
    const noise = framesOf(fixture('noise-1s'));
    expect(noise).toHaveLength(50);
    expect(noise.filter((frame) => vad.isSpeech(frame))).toHaveLength(0);
    expect(silence(500).filter((frame) => vad.isSpeech(frame))).toHaveLength(0);
  });

  it('takes speech 40 dB down (below the energy floor) for silence', () => {
    const far = fixture('en-question').map((sample) => Math.round(sample / 100));
    expect(framesOf(far).filter((frame) => vad.isSpeech(frame))).toHaveLength(0);
  });

  it('keeps the state of each handle apart', async () => {
    const speech = framesOf(fixture('en-long'));
    const noise = framesOf(fixture('noise-1s'));
    const alone = await VoiceActivity.create();
    const [first, second] = [await VoiceActivity.create(), await VoiceActivity.create()];
    try {
      const expected = speech.map((frame) => alone.isSpeech(frame));
      const interleaved = speech.map((frame, index) => {
        second.isSpeech(index % 2 ? speech[speech.length - 1 - index] : noise[index % noise.length]);
        return first.isSpeech(frame);
      });
      expect(interleaved).toEqual(expected);
    } finally {
      for (const handle of [alone, first, second]) handle.free();
    }
  });

  it('refuses a frame that is not 20 ms at 16 kHz, and a freed handle', async () => {
    const handle = await VoiceActivity.create();
    expect(() => handle.isSpeech(new Int16Array(160))).toThrow(RangeError);
    expect(() => handle.isSpeech(new Int16Array(960))).toThrow(RangeError);
    handle.free();
    handle.free();
    expect(() => handle.isSpeech(new Int16Array(FRAME_SAMPLES))).toThrow('freed');
  });
});

describe('TurnDetector on the speech fixtures, with the real VAD', () => {
  it.each(['en-question', 'hi-question'] as const)('turns %s into one utterance, endOfTurnMs after its last speech', (name) => {
    const samples = fixture(name);
    const noted = new NotedVad(vad);
    const detector = new TurnDetector(noted, { endOfTurnMs: END_OF_TURN_MS });
    const frames = [...framesOf(samples), ...silence(2 * END)];

    const events = run(detector, frames);

    expect(events.map((event) => event.type)).toEqual(['speech-start', 'barge-in', 'utterance']);
    const start = speechStart(noted.decisions);
    const lastVoiced = noted.decisions.lastIndexOf(true);
    expect(events[0].frame).toBe(start + START - 1);
    const utterance = events[2];
    if (utterance.type !== 'utterance') throw new Error('not an utterance');
    expect(utterance.frame).toBe(lastVoiced + END);
    expect(utterance.cut).toBe(false);
    // Pre-roll, the speech, and a little of the silence after it.
    const span = speechSpan(samples);
    const expectedMs = (PRE_ROLL + span.last - span.first + 1 + TAIL) * 20;
    expect(Math.abs(utterance.audio.length / 16 - expectedMs)).toBeLessThanOrEqual(150);
    // The audio is the microphone's, from the pre-roll on.
    const from = (start - PRE_ROLL) * FRAME_SAMPLES;
    expect(utterance.audio).toEqual(samples.subarray(from, from + utterance.audio.length));
  });

  it('keeps the long fixture, pauses and all, as one utterance, and signals barge-in after 300 ms of speech', () => {
    const noted = new NotedVad(vad);
    const detector = new TurnDetector(noted, { endOfTurnMs: END_OF_TURN_MS });

    const events = run(detector, [...framesOf(fixture('en-long')), ...silence(END)]);

    expect(events.map((event) => event.type)).toEqual(['speech-start', 'barge-in', 'utterance']);
    const start = speechStart(noted.decisions);
    let voiced = 0;
    expect(events[1].frame).toBe(noted.decisions.findIndex((speech, index) => index >= start && (voiced += Number(speech)) === BARGE_IN));
    expect(noted.decisions.slice(events[0].frame, events[2].frame)).toContain(false); // the pauses were there
  });

  it('cuts the long fixture at its pauses when the end of turn is short', () => {
    const detector = new TurnDetector(vad, { endOfTurnMs: 100 });
    const utterances = run(detector, [...framesOf(fixture('en-long')), ...silence(10)]).filter((event) => event.type === 'utterance');
    expect(utterances.length).toBeGreaterThan(1);
  });

  it('holds nothing but the pre-roll through an hour of a quiet microphone, and still hears the visitor after it', () => {
    const noise = framesOf(fixture('noise-1s'));
    const detector = new TurnDetector(vad, { endOfTurnMs: END_OF_TURN_MS });
    let mostHeld = 0;
    let events = 0;
    for (let index = 0; index < 3_600 * 50; index++) {
      events += detector.push(noise[index % noise.length]).length;
      mostHeld = Math.max(mostHeld, detector.heldFrames);
    }
    expect(events).toBe(0);
    expect(mostHeld).toBe(PRE_ROLL);

    const after = run(detector, [...framesOf(fixture('en-question')), ...silence(END)]);
    expect(after.map((event) => event.type)).toEqual(['speech-start', 'barge-in', 'utterance']);
  });
});

describe('TurnDetector (scripted decisions)', () => {
  const detect = (script: string, options: Partial<ConstructorParameters<typeof TurnDetector>[1]> = {}) => {
    const detector = new TurnDetector(new ScriptedVad(script), { endOfTurnMs: END_OF_TURN_MS, ...options });
    return { detector, events: run(detector, numbered(script.length)) };
  };

  it('takes a blip shorter than startMs for noise, and holds only the pre-roll', () => {
    const script = `${'.'.repeat(30)}${'#'.repeat(START - 1)}${'.'.repeat(40)}`;
    const { detector, events } = detect(script);
    expect(events).toEqual([]);
    expect(detector.heldFrames).toBe(PRE_ROLL);
  });

  it('starts after startMs of speech, signals barge-in once after bargeInMs voiced, and ends after endOfTurnMs of silence', () => {
    // 20 quiet, 10 voiced, a pause of 10, 20 voiced, then silence until the end of the turn and beyond.
    const script = `${'.'.repeat(20)}${'#'.repeat(10)}${'.'.repeat(10)}${'#'.repeat(20)}${'.'.repeat(END + 10)}`;
    const { events } = detect(script);

    expect(events.map(({ type, frame }) => [type, frame])).toEqual([
      ['speech-start', 20 + START - 1],
      ['barge-in', 40 + (BARGE_IN - 10) - 1], // the 15th voiced frame, counted across the pause
      ['utterance', 60 + END - 1],
    ]);
    const utterance = events[2];
    if (utterance.type !== 'utterance') throw new Error('not an utterance');
    expect(utterance.cut).toBe(false);
    expect(frameNumbers(utterance.audio)).toEqual(range(20 - PRE_ROLL, 60 + TAIL));
  });

  it('keeps as much pre-roll as there is at the start of the stream', () => {
    const { events } = detect(`...${'#'.repeat(10)}${'.'.repeat(END)}`);
    const utterance = events.find((event) => event.type === 'utterance');
    expect(utterance?.type === 'utterance' && frameNumbers(utterance.audio)).toEqual(range(0, 13 + TAIL));
  });

  it('honours the options it is given', () => {
    const script = `${'.'.repeat(10)}${'#'.repeat(30)}${'.'.repeat(20)}`;
    const { events } = detect(script, { endOfTurnMs: 200, startMs: 200, bargeInMs: 500, preRollMs: 100, tailMs: 0 });
    expect(events.map(({ type, frame }) => [type, frame])).toEqual([
      ['speech-start', 10 + 10 - 1],
      ['barge-in', 10 + 25 - 1],
      ['utterance', 40 + 10 - 1],
    ]);
    const utterance = events[2];
    expect(utterance.type === 'utterance' && frameNumbers(utterance.audio)).toEqual(range(5, 40));
  });

  it('cuts an utterance at maxUtteranceMs and goes on with the next, losing no frame, holding no more than the cap', () => {
    const voiced = 1_600;
    const script = `${'.'.repeat(20)}${'#'.repeat(voiced)}${'.'.repeat(END)}`;
    const detector = new TurnDetector(new ScriptedVad(script), { endOfTurnMs: END_OF_TURN_MS });
    let mostHeld = 0;
    const events = numbered(script.length).flatMap((frame, index) => {
      const pushed = detector.push(frame).map((event) => ({ ...event, frame: index }));
      mostHeld = Math.max(mostHeld, detector.heldFrames);
      return pushed;
    });

    const utterances = events.filter((event) => event.type === 'utterance');
    expect(utterances.map(({ cut, frame }) => [cut, frame])).toEqual([
      [true, 20 - PRE_ROLL + 1_500 - 1],
      [false, 20 + voiced + END - 1],
    ]);
    // 30 s at most, the pre-roll included: what a speech-to-text provider is sent (Sarvam's takes at most 30 s).
    expect(mostHeld).toBeLessThanOrEqual(1_500);
    expect(utterances[0].type === 'utterance' && utterances[0].audio.length).toBe(1_500 * FRAME_SAMPLES);
    const kept = utterances.flatMap(({ audio }) => frameNumbers(audio));
    expect(kept).toEqual(range(20 - PRE_ROLL, 20 + voiced + TAIL));
    expect(events.filter((event) => event.type === 'speech-start')).toHaveLength(2);
    expect(events.filter((event) => event.type === 'barge-in')).toHaveLength(2);
  });

  it('tells the silence it waited for: endOfTurnMs when the turn ended, none when cut in speech, what there was when cut in a pause', () => {
    const silenceOf = (events: TurnEvent[]) =>
      events.flatMap((event) => (event.type === 'utterance' ? [[event.cut, event.silenceMs]] : []));
    // Ended by silence; the option not a whole number of frames waits whole frames (710 ms: 36 frames).
    expect(silenceOf(detect(`${'.'.repeat(20)}${'#'.repeat(20)}${'.'.repeat(END + 5)}`).events)).toEqual([[false, END_OF_TURN_MS]]);
    expect(silenceOf(detect(`${'#'.repeat(20)}${'.'.repeat(40)}`, { endOfTurnMs: 710 }).events)).toEqual([[false, 720]]);
    // Cut at maxUtteranceMs (50 frames, no pre-roll) while speaking, then while 5 frames of a pause had been heard.
    const cut = { maxUtteranceMs: 1_000, preRollMs: 0 };
    expect(silenceOf(detect(`${'#'.repeat(60)}`, cut).events)).toEqual([[true, 0]]);
    expect(silenceOf(detect(`${'#'.repeat(45)}${'.'.repeat(5)}`, cut).events)).toEqual([[true, 5 * 20]]);
  });

  it('copies the frames it keeps, so that the caller may reuse its buffer', () => {
    const script = `${'#'.repeat(10)}${'.'.repeat(END)}`;
    const detector = new TurnDetector(new ScriptedVad(script), { endOfTurnMs: END_OF_TURN_MS });
    const buffer = new Int16Array(FRAME_SAMPLES);
    const events = [...script].flatMap((_, index) => detector.push(buffer.fill(index)));
    const utterance = events.find((event) => event.type === 'utterance');
    expect(utterance?.type === 'utterance' && frameNumbers(utterance.audio)).toEqual(range(0, 10 + TAIL));
  });
});
