/**
 * Audio worked through, at most, in one turn of the event loop, every call together: a second of it costs about
 * 0.3 ms of CPU at 16 kHz and 1.3 ms at 48 kHz (resampling and the VAD: bench/voice-resample.ts), so that a
 * burst holds the loop for a few milliseconds at a time however many calls send one.
 */
export const TURN_MS = 1_000;
/** Of one call in one visit of a turn: the calls with audio waiting take turns at this much each. */
export const SLICE_MS = 200;
/**
 * Audio one call may have waiting, at most: a whole burst (the socket allows 30 s at once) and some. Past it (the
 * instance is so busy that the call's audio comes faster than it is worked through), what comes is dropped.
 */
export const MAX_WAITING_MS = 32_000;

/**
 * One call's audio (16-bit mono PCM at `rate`), waiting to be worked through by `work` a slice at a time, in the
 * order it came. `after` runs something once the audio received before it has been worked through (a text
 * frame's turn, the end of the call), so that the order of a socket's frames is kept.
 */
export class AudioIntake {
  private chunks: Int16Array[] = [];
  /** Of the first chunk, the samples already worked through. */
  private offset = 0;
  private waitingSamples = 0;
  private received = 0;
  private workedThrough = 0;
  private droppedSamples = 0;
  private marks: { at: number; then: () => void }[] = [];
  private readonly maxSamples: number;

  constructor(
    readonly rate: number,
    private readonly queue: AudioWorkQueue,
    private readonly work: (pcm: Int16Array) => void,
    /** `work` threw: the intake is stopped. */
    private readonly failed: (error: unknown) => void,
  ) {
    this.maxSamples = (rate * MAX_WAITING_MS) / 1000;
  }

  /** Samples received and not yet worked through. */
  get waiting(): number {
    return this.waitingSamples;
  }

  /** Milliseconds of audio dropped because too much was waiting. */
  get droppedMs(): number {
    return (this.droppedSamples * 1000) / this.rate;
  }

  /** Queues `pcm` (kept as it is: the caller gives it up); false when it was dropped, too much being already waiting. */
  push(pcm: Int16Array): boolean {
    if (this.waitingSamples + pcm.length > this.maxSamples) {
      this.droppedSamples += pcm.length;
      return false;
    }
    this.chunks.push(pcm);
    this.waitingSamples += pcm.length;
    this.received += pcm.length;
    this.queue.submit(this);
    return true;
  }

  /** Runs `then` once everything received so far has been worked through: at once if it has. */
  after(then: () => void): void {
    if (this.workedThrough >= this.received) then();
    else this.marks.push({ at: this.received, then });
  }

  /** Drops what waits (the call is closing); its `after`s run now. */
  cancel(): void {
    this.chunks = [];
    this.offset = 0;
    this.waitingSamples = 0;
    this.queue.remove(this);
    for (const mark of this.marks.splice(0)) mark.then();
  }

  /** Works through up to `maxSamples` of what waits, in order; the samples it did. Called by the queue. */
  step(maxSamples: number): number {
    let done = 0;
    try {
      while (done < maxSamples && this.chunks.length > 0) {
        const chunk = this.chunks[0];
        // A piece ends where something waits for the audio before it, which then runs.
        const untilMark = this.marks.length > 0 ? this.marks[0].at - this.workedThrough : Number.POSITIVE_INFINITY;
        const take = Math.min(chunk.length - this.offset, maxSamples - done, untilMark);
        const piece = chunk.subarray(this.offset, this.offset + take);
        this.offset += take;
        if (this.offset === chunk.length) {
          this.chunks.shift();
          this.offset = 0;
        }
        this.waitingSamples -= take;
        this.workedThrough += take;
        done += take;
        this.work(piece);
        while (this.marks.length > 0 && this.marks[0].at <= this.workedThrough) this.marks.shift()!.then();
      }
    } catch (error) {
      this.cancel();
      this.failed(error);
    }
    return done;
  }
}

/**
 * The calls' audio, worked through off the socket's callbacks: a socket's frames are only queued as they arrive
 * (a network read can hand over seconds of them at once), and each turn of the event loop (setImmediate) works
 * through at most TURN_MS of audio, SLICE_MS of each call in turn, then yields, so that requests, the voice clock
 * and the other calls go on between the slices of a burst. One queue for the instance (SpokenCalls').
 */
export class AudioWorkQueue {
  private readonly waiting = new Set<AudioIntake>();
  private scheduled = false;
  /** Turns run, and the most audio one of them worked through (ms): what the tests and the benchmark read. */
  turns = 0;
  largestTurnMs = 0;

  constructor(private readonly defer: (run: () => void) => void = (run) => setImmediate(run)) {}

  submit(intake: AudioIntake): void {
    this.waiting.add(intake);
    if (this.scheduled) return;
    this.scheduled = true;
    this.defer(this.run);
  }

  remove(intake: AudioIntake): void {
    this.waiting.delete(intake);
  }

  private readonly run = (): void => {
    this.scheduled = false;
    let leftMs = TURN_MS;
    // The calls in turn, the first of the line first; one with more goes to its back (a Set keeps insertion order).
    for (const intake of this.waiting) {
      if (leftMs <= 0) break;
      const done = intake.step(Math.ceil((intake.rate * Math.min(SLICE_MS, leftMs)) / 1000));
      leftMs -= (done * 1000) / intake.rate;
      this.waiting.delete(intake);
      if (intake.waiting > 0) this.waiting.add(intake);
    }
    this.turns++;
    this.largestTurnMs = Math.max(this.largestTurnMs, TURN_MS - leftMs);
    if (this.waiting.size > 0 && !this.scheduled) {
      this.scheduled = true;
      this.defer(this.run);
    }
  };
}
