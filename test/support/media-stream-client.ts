import { randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { mulaw } from 'alawmulaw';
import WebSocket from 'ws';
import { resample } from '../../src/voice/audio/resample';

/** μ-law at 8 kHz: 160 bytes per 20 ms. */
const BYTES_PER_MS = 8;
const FRAME_BYTES = 160;

/** The caller's speech (16-bit PCM at `rate`) as the carrier sends it: 8 kHz μ-law. */
export const toMulaw = (pcm: Int16Array, rate: number): Uint8Array => mulaw.encode(resample(pcm, rate, 8_000));

export type ServiceMessage = Record<string, unknown> & { event?: string };

/**
 * The carrier's side of a Twilio media stream, for protocol-level tests: it opens the socket, says `connected` and
 * `start` (with the stream token as `customParameters.token`), sends the caller's μ-law in 20 ms `media` frames at
 * real time, `dtmf` and `stop`; of what the service sends, it plays the `media` at real time (`playout: 'real-time'`)
 * or at once (`instant`), echoes each `mark` once the audio before it has played, and on `clear` drops what has not
 * played and echoes the pending marks at once, as Twilio does. Tests wait on its events, never on time.
 */
export class MediaStreamClient extends EventEmitter {
  readonly streamSid = `MZ${randomBytes(16).toString('hex')}`;
  readonly messages: ServiceMessage[] = [];
  /** Mark names echoed back, in order; and the `clear`s received. */
  readonly echoed: string[] = [];
  clears = 0;
  /** μ-law bytes of the agent's voice received (all), and played (a clear drops the rest). */
  received = 0;
  played = 0;
  private readonly agent: Buffer[] = [];
  private pending: { name: string; at: number }[] = [];
  private sequence = 0;
  private readonly timer: NodeJS.Timeout;
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(
    readonly socket: WebSocket,
    private readonly playout: 'real-time' | 'instant',
  ) {
    super();
    this.setMaxListeners(0);
    this.closed = new Promise((resolve) =>
      socket.once('close', (code: number, reason: Buffer) => {
        clearInterval(this.timer);
        this.emit('message');
        resolve({ code, reason: reason.toString() });
      }),
    );
    socket.on('message', (data: Buffer) => this.receive(data));
    this.timer = setInterval(() => this.play(FRAME_BYTES), 20);
  }

  static async connect(baseUrl: string, playout: 'real-time' | 'instant' = 'instant'): Promise<MediaStreamClient> {
    const socket = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/telephony/twilio/stream`);
    socket.on('error', () => undefined);
    await once(socket, 'open');
    return new MediaStreamClient(socket, playout);
  }

  /** `connected`, then `start` with the token (and whatever `start` fields `changes` replace). */
  start(token: string | undefined, callSid = `CA${randomBytes(16).toString('hex')}`, changes: Record<string, unknown> = {}): void {
    this.socket.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    this.send({
      event: 'start',
      streamSid: this.streamSid,
      start: {
        accountSid: `AC${'0'.repeat(32)}`,
        streamSid: this.streamSid,
        callSid,
        tracks: ['inbound'],
        customParameters: token === undefined ? {} : { token },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        ...changes,
      },
    });
  }

  /** One message as the carrier sends it (with its sequence number). */
  send(message: Record<string, unknown>): void {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(JSON.stringify({ ...message, sequenceNumber: String(++this.sequence) }));
  }

  /** One `media` frame of these μ-law bytes. */
  media(bytes: Uint8Array, chunk = this.sequence): void {
    this.send({
      event: 'media',
      streamSid: this.streamSid,
      media: { track: 'inbound', chunk: String(chunk), timestamp: String(chunk * 20), payload: Buffer.from(bytes).toString('base64') },
    });
  }

  /** The caller says `pcm` (16-bit at `rate`): 20 ms frames at real time, each at its absolute deadline. */
  async say(pcm: Int16Array, rate = 16_000, stop: () => boolean = () => false): Promise<void> {
    const bytes = toMulaw(pcm, rate);
    const begin = performance.now();
    for (let index = 0, offset = 0; offset < bytes.length && !stop(); index++, offset += FRAME_BYTES) {
      const wait = begin + index * 20 - performance.now();
      if (wait > 0) await sleep(wait);
      if (this.socket.readyState !== WebSocket.OPEN) return;
      const frame = new Uint8Array(FRAME_BYTES).fill(0xff); // μ-law silence pads the last frame
      frame.set(bytes.subarray(offset, offset + FRAME_BYTES));
      this.media(frame);
    }
  }

  /** `ms` of silence from the caller, at real time. */
  quiet(ms: number): Promise<void> {
    return this.say(new Int16Array((16_000 * ms) / 1000));
  }

  press(digits: string): void {
    for (const digit of digits) this.send({ event: 'dtmf', streamSid: this.streamSid, dtmf: { track: 'inbound_track', digit } });
  }

  /** The caller hangs up: `stop`, then the carrier closes the socket. */
  async hangUp(): Promise<void> {
    this.send({ event: 'stop', streamSid: this.streamSid, stop: { accountSid: `AC${'0'.repeat(32)}`, callSid: 'CA' } });
    this.socket.close(1000);
    await this.closed;
  }

  /** Resolves with the first message (already received or to come) that `test` accepts; rejects once the socket closed without one. */
  async next(test: (message: ServiceMessage) => boolean): Promise<ServiceMessage> {
    for (;;) {
      const found = this.messages.find(test);
      if (found) return found;
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error('the stream closed before the message');
      await once(this, 'message');
    }
  }

  /** Resolves once `check` holds (checked after each message from the service and each played frame). */
  async until(check: () => boolean): Promise<void> {
    while (!check()) {
      if (this.socket.readyState === WebSocket.CLOSED) throw new Error('the stream closed first');
      await once(this, 'message');
    }
  }

  /** The agent's voice received so far, decoded to 16-bit PCM at 8 kHz. */
  agentPcm(): Int16Array {
    return mulaw.decode(new Uint8Array(Buffer.concat(this.agent)));
  }

  get playedMs(): number {
    return this.played / BYTES_PER_MS;
  }

  private receive(data: Buffer): void {
    const message = JSON.parse(data.toString('utf8')) as ServiceMessage;
    this.messages.push(message);
    if (message.event === 'media') {
      const bytes = Buffer.from((message.media as { payload: string }).payload, 'base64');
      this.agent.push(bytes);
      this.received += bytes.length;
      if (this.playout === 'instant') this.play(bytes.length);
    } else if (message.event === 'mark') {
      this.pending.push({ name: (message.mark as { name: string }).name, at: this.received });
      this.echoPlayed();
    } else if (message.event === 'clear') {
      this.clears++;
      this.received = this.played;
      for (const mark of this.pending.splice(0)) this.echo(mark.name);
    }
    this.emit('message');
  }

  /** Plays up to `bytes` of what waits, and echoes the marks it reaches. */
  private play(bytes: number): void {
    const before = this.played;
    this.played = Math.min(this.received, this.played + bytes);
    this.echoPlayed();
    if (this.played !== before) this.emit('message');
  }

  private echoPlayed(): void {
    while (this.pending.length > 0 && this.pending[0].at <= this.played) this.echo(this.pending.shift()!.name);
  }

  private echo(name: string): void {
    this.echoed.push(name);
    this.send({ event: 'mark', streamSid: this.streamSid, mark: { name } });
  }
}
