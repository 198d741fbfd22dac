import { AgentVoice, LEAD_FRAMES } from '../src/voice/pipeline/agent-voice';
import { VisitorAudio } from '../src/voice/pipeline/visitor-audio';
import { FRAME_SAMPLES } from '../src/voice/voice-format';

/** `frames` frames of a constant sample value (which frame went where can be read back). */
const speech = (frames: number, value = 1000) => new Int16Array(frames * FRAME_SAMPLES).fill(value);

/** Runs `ticks` ticks; returns what each one played (the sample value, 0 for silence) and the frames sent. */
function run(voice: AgentVoice, ticks: number, accept = () => true) {
  const played: number[] = [];
  let sent = 0;
  for (let i = 0; i < ticks; i++) {
    const frame = voice.tick(() => accept() && ++sent > 0);
    played.push(frame ? frame[0] : 0);
  }
  return { played, sent };
}

describe('the agent voice (pacing, what was heard, interruption)', () => {
  it('sends at most LEAD_FRAMES ahead of what plays, then one frame per tick, and plays every frame once in order', () => {
    const voice = new AgentVoice(1000);
    const pcm = new Int16Array(30 * FRAME_SAMPLES);
    for (let frame = 0; frame < 30; frame++) pcm.fill(frame + 1, frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES);
    voice.enqueue(pcm);
    const first = run(voice, 1);
    expect(first).toEqual({ played: [0], sent: LEAD_FRAMES });
    const rest = run(voice, 40);
    expect(rest.sent).toBe(30 - LEAD_FRAMES);
    expect(rest.played.filter(Boolean)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it('sends nothing while the socket refuses (backpressure), and catches up once it accepts', () => {
    const voice = new AgentVoice(1000);
    voice.enqueue(speech(5));
    expect(run(voice, 3, () => false)).toEqual({ played: [0, 0, 0], sent: 0 });
    expect(run(voice, 1).sent).toBe(5);
  });

  it('cuts audio of any length into frames, padding a sentence’s last partial frame', () => {
    const voice = new AgentVoice(1000);
    voice.enqueue(speech(1).subarray(0, 100));
    voice.enqueue(speech(1).subarray(0, 300)); // 400 samples: one frame and 80 over
    voice.endSentence('Hello there.');
    expect(run(voice, 4).sent).toBe(2);
  });

  it('hears whole sentences played, the first words of the one cut off, and nothing not yet played', () => {
    const voice = new AgentVoice(1000);
    voice.enqueue(speech(10));
    voice.endSentence('We open at nine.');
    voice.enqueue(speech(10));
    voice.endSentence('We close at six on weekdays.');
    run(voice, 1); // sends the lead; nothing played yet
    expect(voice.heard()).toBe('');
    run(voice, 10); // the first sentence played
    expect(voice.heard()).toBe('We open at nine.');
    run(voice, 5); // half of the second
    expect(voice.heard()).toBe('We open at nine. We close at');
    voice.clear();
    expect(run(voice, 5).played).toEqual([0, 0, 0, 0, 0]);
    expect(voice.heard()).toBe('We open at nine. We close at');
  });

  it('makes synthesis wait while the queue is full, and lets it go on as frames leave or on clear', async () => {
    const voice = new AgentVoice(4);
    voice.enqueue(speech(6));
    let roomy = false;
    const room = voice.room().then(() => (roomy = true));
    await Promise.resolve();
    expect(roomy).toBe(false);
    run(voice, 1); // sends them all (LEAD_FRAMES > 6)
    await room;
    expect(roomy).toBe(true);
    voice.enqueue(speech(20));
    const waiting = voice.room();
    voice.clear();
    await waiting;
  });

  it('is idle once everything enqueued has played', async () => {
    const voice = new AgentVoice(1000);
    voice.enqueue(speech(3));
    let idle = false;
    const done = voice.idle().then(() => (idle = true));
    run(voice, 3);
    await Promise.resolve();
    expect(idle).toBe(false);
    run(voice, 1);
    await done;
    expect(idle).toBe(true);
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
