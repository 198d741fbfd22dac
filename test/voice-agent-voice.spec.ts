import { AgentVoice, LEAD_FRAMES, MARK_EVERY_FRAMES, MARKS_LEAD_FRAMES, VoiceSink } from '../src/voice/pipeline/agent-voice';
import { VisitorAudio } from '../src/voice/pipeline/visitor-audio';
import { FRAME_SAMPLES } from '../src/voice/voice-format';

/** `frames` frames of a constant sample value (which frame went where can be read back). */
const speech = (frames: number, value = 1000) => new Int16Array(frames * FRAME_SAMPLES).fill(value);

/** A transport that counts what it is sent (`accepting` false: it is backed up), with the marks and clears it was told. */
class CountingSink implements VoiceSink {
  sent = 0;
  accepting = true;
  readonly marks: string[] = [];
  clears = 0;
  constructor(readonly playback: 'clock' | 'marks') {}
  sendAudio = () => this.accepting && ++this.sent > 0;
  mark = (name: string) => void this.marks.push(name);
  clear = () => void this.clears++;
}

/** An agent voice on a transport of `playback`, and that transport. */
function voiceOn(playback: 'clock' | 'marks', maxQueuedFrames = 1000) {
  const sink = new CountingSink(playback);
  return { voice: new AgentVoice(sink, maxQueuedFrames), sink };
}

/** Runs `ticks` ticks; returns what each one recorded (the sample value, 0 for silence) and the frames sent meanwhile. */
function run(voice: AgentVoice, sink: CountingSink, ticks: number) {
  const played: number[] = [];
  const before = sink.sent;
  for (let i = 0; i < ticks; i++) {
    const frame = voice.tick();
    played.push(frame ? frame[0] : 0);
  }
  return { played, sent: sink.sent - before };
}

describe('the agent voice (pacing, what was heard, interruption)', () => {
  it('sends at most LEAD_FRAMES ahead of what plays, then one frame per tick, and plays every frame once in order', () => {
    const { voice, sink } = voiceOn('clock');
    const pcm = new Int16Array(30 * FRAME_SAMPLES);
    for (let frame = 0; frame < 30; frame++) pcm.fill(frame + 1, frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES);
    voice.enqueue(pcm);
    expect(sink.sent).toBe(LEAD_FRAMES); // at once, not at the next tick
    const first = run(voice, sink, 1);
    expect(first).toEqual({ played: [1], sent: 1 });
    const rest = run(voice, sink, 40);
    expect(rest.sent).toBe(30 - LEAD_FRAMES - 1);
    expect([...first.played, ...rest.played].filter(Boolean)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(sink.marks).toEqual([]);
  });

  it('sends nothing while the socket refuses (backpressure), and catches up once it accepts', () => {
    const { voice, sink } = voiceOn('clock');
    sink.accepting = false;
    voice.enqueue(speech(5));
    expect(run(voice, sink, 3)).toEqual({ played: [0, 0, 0], sent: 0 });
    sink.accepting = true;
    expect(run(voice, sink, 1).sent).toBe(5);
  });

  it('cuts audio of any length into frames, padding a sentence’s last partial frame', () => {
    const { voice, sink } = voiceOn('clock');
    voice.enqueue(speech(1).subarray(0, 100));
    voice.enqueue(speech(1).subarray(0, 300)); // 400 samples: one frame and 80 over
    voice.endSentence('Hello there.');
    expect(sink.sent).toBe(2);
  });

  it('hears whole sentences played, the first words of the one cut off, and nothing not yet played', () => {
    const { voice, sink } = voiceOn('clock');
    voice.enqueue(speech(10));
    voice.endSentence('We open at nine.');
    voice.enqueue(speech(10));
    voice.endSentence('We close at six on weekdays.');
    expect(voice.heard()).toBe(''); // the lead sent, nothing played yet
    run(voice, sink, 10); // the first sentence played
    expect(voice.heard()).toBe('We open at nine.');
    run(voice, sink, 5); // half of the second
    expect(voice.heard()).toBe('We open at nine. We close at');
    voice.clear();
    expect(sink.clears).toBe(1);
    expect(run(voice, sink, 5).played).toEqual([0, 0, 0, 0, 0]);
    expect(voice.heard()).toBe('We open at nine. We close at');
  });

  it('makes synthesis wait while the queue is full, and lets it go on as frames leave or on clear', async () => {
    const { voice, sink } = voiceOn('clock', 4);
    sink.accepting = false;
    voice.enqueue(speech(6));
    let roomy = false;
    const room = voice.room().then(() => (roomy = true));
    await Promise.resolve();
    expect(roomy).toBe(false);
    sink.accepting = true;
    run(voice, sink, 1); // sends them all (LEAD_FRAMES > 6)
    await room;
    expect(roomy).toBe(true);
    voice.enqueue(speech(20));
    const waiting = voice.room();
    voice.clear();
    await waiting;
  });

  it('knows how long what it has not played yet lasts: queued, sent ahead, and a partial frame', () => {
    const { voice, sink } = voiceOn('clock');
    expect(voice.aheadMs).toBe(0);
    voice.enqueue(speech(30));
    voice.enqueue(new Int16Array(FRAME_SAMPLES / 2)); // LEAD_FRAMES sent, the rest queued, half a frame partial
    expect(voice.aheadMs).toBe(30.5 * 20);
    run(voice, sink, 1); // one frame played, one more sent
    expect(voice.aheadMs).toBe(29.5 * 20);
    voice.clear();
    expect(voice.aheadMs).toBe(0);
  });

  it('is idle once everything enqueued has played', async () => {
    const { voice, sink } = voiceOn('clock');
    voice.enqueue(speech(3));
    let idle = false;
    const done = voice.idle().then(() => (idle = true));
    run(voice, sink, 2);
    await Promise.resolve();
    expect(idle).toBe(false);
    run(voice, sink, 1);
    await done;
    expect(idle).toBe(true);
  });
});

describe('the agent voice on a transport that echoes marks (a carrier)', () => {
  it('sends up to a second ahead of the last mark echoed, a mark every 10 frames and at each sentence end', () => {
    const { voice, sink } = voiceOn('marks');
    voice.enqueue(speech(63));
    voice.endSentence('A long sentence.');
    voice.enqueue(speech(7));
    voice.endSentence('Short.');
    expect(sink.sent).toBe(MARKS_LEAD_FRAMES);
    const generation = sink.marks[0].split(':')[0];
    expect(sink.marks).toEqual([10, 20, 30, 40, 50].map((frames) => `${generation}:${frames}`));
    run(voice, sink, 200); // the clock alone plays nothing more: the carrier has said nothing
    expect(sink.sent).toBe(MARKS_LEAD_FRAMES);
    voice.played(`${generation}:20`);
    expect(sink.sent).toBe(70);
    expect(voice.heard()).toBe(''); // 20 of its 63 frames: not a whole word of three
    voice.played(`${generation}:30`);
    expect(sink.marks.slice(5)).toEqual([60, 63, 70].map((frames) => `${generation}:${frames}`));
    expect(voice.heard()).toBe('A'); // 30 of its 63 frames: the first of its three words
    voice.played(`${generation}:63`);
    expect(voice.heard()).toBe('A long sentence.');
  });

  it('is idle once the mark after the last frame comes back, and never from the clock', async () => {
    const { voice, sink } = voiceOn('marks');
    voice.enqueue(speech(12));
    voice.endSentence('Hello.');
    let idle = false;
    const done = voice.idle().then(() => (idle = true));
    run(voice, sink, 30);
    await Promise.resolve();
    expect(idle).toBe(false);
    const [first, last] = sink.marks;
    voice.played(first);
    await Promise.resolve();
    expect(idle).toBe(false);
    voice.played(last);
    await done;
  });

  it("ignores the marks of a generation it cleared (the carrier echoes every pending mark on clear), and a new reply's count starts again", () => {
    const { voice, sink } = voiceOn('marks');
    voice.enqueue(speech(40));
    voice.endSentence('One two three four five six seven eight.');
    const pending = [...sink.marks];
    voice.played(pending[0]); // 10 frames of 40 played
    voice.clear();
    expect(sink.clears).toBe(1);
    for (const mark of pending) voice.played(mark); // the carrier's echoes of the clear: not playback
    expect(voice.heard()).toBe('One two');
    voice.reset();
    voice.enqueue(speech(10));
    voice.endSentence('Next.');
    const [next] = sink.marks.slice(pending.length);
    expect(next.split(':')[0]).not.toBe(pending[0].split(':')[0]);
    expect(next.split(':')[1]).toBe(String(MARK_EVERY_FRAMES));
    voice.played(pending.at(-1)!); // a late echo of the old generation
    expect(voice.heard()).toBe('');
    voice.played(next);
    expect(voice.heard()).toBe('Next.');
  });

  it('records each frame sent once, a tick at a time, whatever the marks say', () => {
    const { voice, sink } = voiceOn('marks');
    const pcm = new Int16Array(12 * FRAME_SAMPLES);
    for (let frame = 0; frame < 12; frame++) pcm.fill(frame + 1, frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES);
    voice.enqueue(pcm);
    voice.endSentence('Twelve frames.');
    for (const mark of sink.marks) voice.played(mark); // the carrier played it all before the recording's clock took it
    expect(voice.started).toBe(false);
    voice.reset(); // the next reply starts: what was sent is still recorded
    expect(run(voice, sink, 14).played).toEqual([...Array.from({ length: 12 }, (_, i) => i + 1), 0, 0]);
    expect(voice.started).toBe(false); // none of it was the new reply's
  });
});

describe("the visitor's audio on its way to the recording", () => {
  it('gives 20 ms per tick across chunk boundaries, silence when none came', () => {
    const audio = new VisitorAudio();
    audio.push(new Int16Array(100).fill(1));
    audio.push(new Int16Array(300).fill(2));
    const first = audio.take();
    expect(first.length).toBe(FRAME_SAMPLES);
    expect([first[0], first[99], first[100], first[319]]).toEqual([1, 1, 2, 2]);
    const second = audio.take();
    expect([second[0], second[79], second[80]]).toEqual([2, 2, 0]);
    expect(audio.take().every((sample) => sample === 0)).toBe(true);
  });

  it('takes a burst beyond its backlog at once, so that the backlog stays bounded', () => {
    const audio = new VisitorAudio();
    audio.push(new Int16Array(50 * FRAME_SAMPLES).fill(7));
    const burst = audio.take();
    expect(burst.length).toBe(36 * FRAME_SAMPLES);
    for (let i = 0; i < 14; i++) expect(audio.take()[FRAME_SAMPLES - 1]).toBe(7);
    expect(audio.take()[0]).toBe(0);
  });
});
