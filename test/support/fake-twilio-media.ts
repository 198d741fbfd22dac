import { randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { mulaw } from 'alawmulaw';
import WebSocket from 'ws';
import { resample } from '../../src/voice/audio/resample';

/**
 * The carrier's side of a Twilio Media Stream (`<Connect><Stream>`), as Twilio runs it, for the stand-in carrier:
 *
 * - it connects to the stream's URL and sends `connected` ({protocol "Call", version "1.0.0"}), then `start`
 *   (streamSid `MZ…`, accountSid, callSid, tracks ["inbound"], the `<Parameter>`s as customParameters, mediaFormat
 *   audio/x-mulaw 8000 Hz mono); every message after `connected` carries a `sequenceNumber` (a string, from 1);
 * - every 20 ms it sends one `media` frame (track "inbound", chunk from 1, timestamp in ms since the start, 160
 *   bytes of base64 μ-law): the caller's queued speech (`say`), silence otherwise, at real time;
 * - what the service sends (`media` to play) goes into a playout buffer played at real time (160 bytes per 20 ms);
 *   a `mark` is echoed once the audio queued before it has played; a `clear` empties the buffer and echoes the
 *   pending marks at once (as Twilio does);
 * - `press` sends `dtmf` events (track "inbound_track"), `hangUp` sends `stop` and closes (the caller hung up);
 *   `stop` does the same when the carrier ends the call (a REST `Status=completed`).
 *
 * Tests await events (`marks`, `played`, `closed`), never sleep.
 */

export const FRAME_BYTES = 160; // 20 ms of 8 kHz μ-law
export const FRAME_MS = 20;
const SAMPLE_RATE = 8000;

/** What `<Connect><Stream>` in a TwiML document says, or undefined when it has none. */
export interface StreamInstruction {
  url: string;
  parameters: Record<string, string>;
}

/** What the carrier does with a TwiML document it is given. */
export type TwimlPlan =
  { kind: 'stream'; stream: StreamInstruction } | { kind: 'say-hangup'; sentences: string[] } | { kind: 'other'; twiml: string };

const unescapeXml = (text: string) =>
  text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

/** A tag's attributes: quoted values may hold `>` (XML escapes `<` and `"` in them, not `>`). */
const ATTRIBUTES = '(?:[^>"/]|"[^"]*"|/(?!>))*';

const attribute = (tag: string, name: string): string | undefined => {
  const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return match ? unescapeXml(match[1]) : undefined;
};

/** Reads the TwiML verbs the stand-in carrier runs: `<Connect><Stream url>` with `<Parameter>`s, or `<Say>`… `<Hangup/>`. */
export function parseTwiml(twiml: string): TwimlPlan {
  const stream = new RegExp(`<Connect>\\s*<Stream\\b(${ATTRIBUTES})(/>|>([\\s\\S]*?)</Stream>)`).exec(twiml);
  if (stream) {
    const url = attribute(stream[1], 'url');
    if (url) {
      const parameters: Record<string, string> = {};
      for (const parameter of (stream[3] ?? '').matchAll(new RegExp(`<Parameter\\b(${ATTRIBUTES})/?>`, 'g'))) {
        const name = attribute(parameter[1], 'name');
        if (name !== undefined) parameters[name] = attribute(parameter[1], 'value') ?? '';
      }
      return { kind: 'stream', stream: { url, parameters } };
    }
  }
  if (/<Hangup\s*\/>/.test(twiml)) {
    const sentences = [...twiml.matchAll(/<Say\b[^>]*>([\s\S]*?)<\/Say>/g)].map((match) => unescapeXml(match[1]));
    return { kind: 'say-hangup', sentences };
  }
  return { kind: 'other', twiml };
}

/** 16-bit PCM at `sampleRate` to 8 kHz μ-law, as the carrier hears a caller. */
export function toMulaw(pcm: Int16Array, sampleRate: number): Uint8Array {
  return mulaw.encode(resample(pcm, sampleRate, SAMPLE_RATE));
}

/** A μ-law byte of silence (0 decodes to -32124; 0xFF is the code of zero). */
const MULAW_SILENCE = 0xff;

interface PendingMark {
  name: string;
  /** The played byte count at which it is reached. */
  at: number;
}

export interface StreamIdentity {
  accountSid: string;
  callSid: string;
}

export class MediaStreamCall extends EventEmitter {
  readonly streamSid = `MZ${randomBytes(16).toString('hex')}`;
  /** Every message the service sent, parsed, in order. */
  readonly received: Record<string, unknown>[] = [];
  /** Mark names echoed back, in order. */
  readonly echoedMarks: string[] = [];
  /** How many `clear`s the service sent. */
  clears = 0;
  /** μ-law bytes of the service's audio: all it sent, and the part that played (a `clear` drops the rest). */
  private readonly sentChunks: Buffer[] = [];
  private playedBytes = 0;
  private queuedBytes = 0;
  private playout: Buffer[] = [];
  private pendingMarks: PendingMark[] = [];
  private outgoing: Uint8Array[] = [];
  private sequence = 0;
  private chunk = 0;
  private startedAt = 0;
  private timer?: NodeJS.Timeout;
  private ticks = 0;
  private ended = false;
  readonly closed: Promise<void>;

  private constructor(
    private readonly socket: WebSocket,
    readonly identity: StreamIdentity,
    readonly parameters: Record<string, string>,
  ) {
    super();
    this.setMaxListeners(0);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('message', (data) => this.receive(data as Buffer));
    socket.once('close', () => this.finish());
  }

  /** Connects to the stream's URL and starts it as Twilio does (`connected`, `start`, then media every 20 ms). */
  static async connect(stream: StreamInstruction, identity: StreamIdentity): Promise<MediaStreamCall> {
    const socket = new WebSocket(stream.url);
    await once(socket, 'open');
    const call = new MediaStreamCall(socket, identity, stream.parameters);
    call.begin();
    return call;
  }

  /** The caller says `pcm` (16-bit at `sampleRate`): its frames go out after what is already queued. */
  say(pcm: Int16Array, sampleRate: number): void {
    this.sayMulaw(toMulaw(pcm, sampleRate));
  }

  /** The caller sends these μ-law bytes (whole 20 ms frames, the last padded with silence). */
  sayMulaw(bytes: Uint8Array): void {
    for (let offset = 0; offset < bytes.length; offset += FRAME_BYTES) {
      const frame = new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
      frame.set(bytes.subarray(offset, offset + FRAME_BYTES));
      this.outgoing.push(frame);
    }
  }

  /** Resolves once the caller's queued speech has all been sent. */
  async spoken(): Promise<void> {
    while (this.outgoing.length > 0 && !this.ended) await once(this, 'tick');
  }

  /** Keypad digits, one `dtmf` event each (as Twilio sends them). */
  press(digits: string): void {
    for (const digit of digits) this.send({ event: 'dtmf', streamSid: this.streamSid, dtmf: { track: 'inbound_track', digit } });
  }

  /** The caller hangs up: `stop`, then the socket closes. */
  async hangUp(): Promise<void> {
    this.stop();
    await this.closed;
  }

  /** Ends the stream as Twilio does when the call ends: `stop` with the call's identity, then close. */
  stop(): void {
    if (this.ended) return;
    this.send({ event: 'stop', streamSid: this.streamSid, stop: { accountSid: this.identity.accountSid, callSid: this.identity.callSid } });
    this.finish();
    this.socket.close(1000);
  }

  /** Resolves once `count` marks have been echoed (played or cleared); their names. */
  async marks(count: number): Promise<string[]> {
    while (this.echoedMarks.length < count) {
      if (this.ended) throw new Error(`the stream ended after ${this.echoedMarks.length} of ${count} marks`);
      await once(this, 'mark');
    }
    return this.echoedMarks.slice(0, count);
  }

  /** Resolves once `ms` of the service's audio has played to the caller. */
  async played(ms: number): Promise<void> {
    while (this.playedBytes < (ms * SAMPLE_RATE) / 1000) {
      if (this.ended) throw new Error(`the stream ended after ${this.playedMs} ms of the agent's audio played`);
      await once(this, 'tick');
    }
  }

  /** Resolves once the service has sent a `clear`. */
  async cleared(count = 1): Promise<void> {
    while (this.clears < count) {
      if (this.ended) throw new Error('the stream ended before a clear');
      await once(this, 'clear');
    }
  }

  /** Resolves once a message satisfying `test` has come from the service (already or later). */
  async message(test: (message: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    for (;;) {
      const found = this.received.find(test);
      if (found) return found;
      if (this.ended) throw new Error('the stream ended before the message');
      await once(this, 'message');
    }
  }

  get playedMs(): number {
    return (this.playedBytes * 1000) / SAMPLE_RATE;
  }

  /** The service's audio so far, decoded to 16-bit PCM at 8 kHz (all of it, cleared parts included). */
  receivedPcm(): Int16Array {
    return mulaw.decode(new Uint8Array(Buffer.concat(this.sentChunks)));
  }

  /** How much of the service's audio is waiting to play, in ms. */
  get bufferedMs(): number {
    return ((this.queuedBytes - this.playedBytes) * 1000) / SAMPLE_RATE;
  }

  private begin(): void {
    this.socket.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    this.startedAt = performance.now();
    this.send({
      event: 'start',
      start: {
        accountSid: this.identity.accountSid,
        streamSid: this.streamSid,
        callSid: this.identity.callSid,
        tracks: ['inbound'],
        customParameters: this.parameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: SAMPLE_RATE, channels: 1 },
      },
      streamSid: this.streamSid,
    });
    this.schedule();
  }

  /** A 20 ms clock on the start's time (drift does not accumulate; a late tick catches up). */
  private schedule(): void {
    if (this.ended) return;
    const due = this.startedAt + (this.ticks + 1) * FRAME_MS;
    this.timer = setTimeout(
      () => {
        while (!this.ended && performance.now() >= this.startedAt + (this.ticks + 1) * FRAME_MS) this.tick();
        this.schedule();
      },
      Math.max(0, due - performance.now()),
    );
  }

  private tick(): void {
    this.ticks++;
    const frame = this.outgoing.shift() ?? new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
    this.chunk++;
    this.send({
      event: 'media',
      streamSid: this.streamSid,
      media: {
        track: 'inbound',
        chunk: String(this.chunk),
        timestamp: String((this.chunk - 1) * FRAME_MS),
        payload: Buffer.from(frame).toString('base64'),
      },
    });
    this.playTick();
    this.emit('tick');
  }

  /** 20 ms of the playout buffer plays; the marks it reaches are echoed. */
  private playTick(): void {
    let budget = FRAME_BYTES;
    while (budget > 0 && this.playout.length > 0) {
      const head = this.playout[0];
      const taken = Math.min(budget, head.length);
      budget -= taken;
      this.playedBytes += taken;
      if (taken === head.length) this.playout.shift();
      else this.playout[0] = head.subarray(taken);
    }
    while (this.pendingMarks.length > 0 && this.pendingMarks[0].at <= this.playedBytes) this.echoMark(this.pendingMarks.shift()!.name);
  }

  private receive(data: Buffer): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    } catch {
      return; // Twilio ignores what is not JSON
    }
    this.received.push(message);
    const payload = (message.media as { payload?: string } | undefined)?.payload;
    if (message.event === 'media' && typeof payload === 'string') {
      const bytes = Buffer.from(payload, 'base64');
      this.sentChunks.push(bytes);
      this.playout.push(bytes);
      this.queuedBytes += bytes.length;
    } else if (message.event === 'mark') {
      const mark = (message.mark as { name?: unknown } | undefined)?.name;
      const name = typeof mark === 'string' ? mark : '';
      this.pendingMarks.push({ name, at: this.queuedBytes });
      // A mark with nothing before it to play comes back at once.
      if (this.queuedBytes <= this.playedBytes) this.echoMark(this.pendingMarks.shift()!.name);
    } else if (message.event === 'clear') {
      this.clears++;
      this.playout = [];
      this.queuedBytes = this.playedBytes;
      for (const mark of this.pendingMarks.splice(0)) this.echoMark(mark.name);
      this.emit('clear');
    }
    this.emit('message', message);
  }

  private echoMark(name: string): void {
    this.echoedMarks.push(name);
    this.send({ event: 'mark', streamSid: this.streamSid, mark: { name } });
    this.emit('mark', name);
  }

  private send(message: Record<string, unknown>): void {
    if (this.ended || this.socket.readyState !== WebSocket.OPEN) return;
    this.sequence++;
    this.socket.send(JSON.stringify({ ...message, sequenceNumber: String(this.sequence) }));
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    this.emit('tick');
    this.emit('mark');
    this.emit('clear');
    this.emit('message');
    this.emit('end');
  }
}
