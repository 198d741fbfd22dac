import { HttpException, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { isUuid } from '../common/id.pipes';
import { conversationOriginAllowed } from '../conversations/conversation-cors';
import { ConversationTalk } from '../conversations/conversation-talk.service';
import { ConversationAccess, ConversationCorsRule } from '../conversations/conversations.repository';
import { SendMessageDto } from '../conversations/dto/start-conversation.dto';
import { validatedBody } from '../conversations/validated-body';
import { copyPcm } from './audio/pcm';
import { CallTransport, VoiceCall, VoiceCalls, VoiceServerMessage } from './voice-call';
import { VoiceCapacity } from './voice-capacity';
import type { CredentialBlock } from './voice-credential-limit';
import { VOICE_SAMPLE_RATE } from './voice-format';
import { closeUnderLease, VoiceLeasesRepository } from './voice-leases.repository';

/** The session's timings; the tests shorten them. */
export interface VoiceSessionTimings {
  /** For the `start` frame after the upgrade (4408 after). */
  startTimeoutMs: number;
  /** Between pings; a client that has not answered the previous one by the next is dropped. */
  pingIntervalMs: number;
  /** How long the socket may hold more than MAX_UNSENT_BYTES unsent before it is dropped (a client that does not read). */
  unsentGraceMs: number;
  /** The lease's length; it is renewed every third of it. */
  leaseSeconds: number;
}

export const DEFAULT_TIMINGS: VoiceSessionTimings = {
  startTimeoutMs: 10_000,
  pingIntervalMs: 15_000,
  unsentGraceMs: 5_000,
  leaseSeconds: 30,
};

/** Bytes the socket may hold unsent: beyond, the agent's voice waits (and a socket that stays above is dropped). */
const MAX_UNSENT_BYTES = 64 * 1024;
const MIN_FRAME_MS = 10;
const MAX_FRAME_MS = 200;
/** Audio may arrive at up to twice real time (a client catching up after a network hiccup)… */
const AUDIO_SPEED_LIMIT = 2;
/**
 * …beyond a burst of at most this much (a token bucket: a long silence does not save up a flood). The longest
 * utterance, so that a client may send a recorded one at once.
 */
const AUDIO_BURST_MS = 30_000;
/** Text frames (utterances, `end`) per second at most. */
const TEXT_FRAMES_PER_SECOND = 5;
/** Frames received between `start` and `ready`, kept for the call, at most. */
const MAX_EARLY_FRAMES = 50;
/** How often a socket waiting for the lease of one that has just closed tries it again. */
const LEASE_POLL_MS = 50;

export interface VoiceSessionServices {
  talk: ConversationTalk;
  leases: VoiceLeasesRepository;
  calls: VoiceCalls;
  capacity: VoiceCapacity;
  /** CORS_ORIGINS: the pages that may open an API conversation (besides none). */
  corsOrigins: string[];
  logger: Logger;
}

/**
 * The socket's client as its handshake showed it. Nothing about the conversation was looked up then: whether it
 * exists, and which pages may open it, is told only to a socket whose `start` proves its token.
 */
export interface VoiceSocketClient {
  conversationId: string;
  /** The client's address (the reply caps count it). */
  address: string;
  /** Its `Origin` header (none from a server). */
  origin: string | undefined;
  /** The refusal for an address over the budget of credentials that prove nothing, found without database work. */
  blocked(): Promise<CredentialBlock | undefined>;
  /** Counts this socket against that budget: it proved no token. */
  countUnproven(): Promise<void>;
}

/** `refused`: it proved no token, and is being counted before it is closed. */
type State = 'waiting' | 'opening' | 'open' | 'refused' | 'closed';
type Frame = { data: Buffer; binary: boolean };

/** Closes the socket with `code` after an `error` message: the frame broke a rule of section 15; the conversation goes on. */
class FrameRefused extends Error {
  constructor(
    readonly code: 1007 | 1008,
    message: string,
  ) {
    super(message);
  }
}

/**
 * One voice socket (contract section 15): the `start` frame that proves its token within the time allowed (a
 * socket that proves none counts against its address, as a widget route's 404 does), the page's origin, a place
 * among the calls the instance serves, the lease that makes it the conversation's only socket, then the frames
 * each way between the client and the call's pipeline (VoiceCall), each checked against the rules; pings that drop
 * a client gone silent, and a check that drops one that does not read what it is sent.
 */
export class VoiceSession implements CallTransport {
  /** The browser plays what it is sent at real time. */
  readonly playback = 'clock';
  private state: State = 'waiting';
  private readonly leaseId = randomUUID();
  private access: ConversationAccess | undefined;
  private call: VoiceCall | undefined;
  /** The `start` being proved, the lease taken and the call set up. */
  private opening: Promise<void> = Promise.resolve();
  private sampleRate = VOICE_SAMPLE_RATE;
  private early: Frame[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  /** The lease's renewal, which outlives the socket until the call has stored its part of the recording. */
  private renewal: NodeJS.Timeout | undefined;
  /** Gives back the call's place on the instance (VoiceCapacity), taken at `start`, once the socket is closed. */
  private givePlaceBack: (() => void) | undefined;
  private answeredPing = true;
  private unsentSince: number | undefined;
  private audioCreditMs = AUDIO_BURST_MS;
  private audioCreditAt = 0;
  private textWindowStart = 0;
  private textFrames = 0;

  constructor(
    private readonly socket: WebSocket,
    private readonly client: VoiceSocketClient,
    private readonly services: VoiceSessionServices,
    private readonly timings: VoiceSessionTimings,
    onClosed: () => void,
  ) {
    this.timers.push(
      setTimeout(() => this.state === 'waiting' && this.refuseUnproven(4408, 'No start frame in time'), timings.startTimeoutMs),
    );
    socket.on('message', (data: Buffer, binary: boolean) => this.receive({ data, binary }));
    socket.on('pong', () => (this.answeredPing = true));
    socket.on('error', () => undefined); // a protocol error closes the socket; 'close' follows
    socket.on('close', () => void this.closed().finally(onClosed));
  }

  send(message: VoiceServerMessage): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  sendAudio(frame: Int16Array): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return true; // gone: nothing to wait for
    if (this.socket.bufferedAmount > MAX_UNSENT_BYTES) return false;
    this.socket.send(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength));
    return true;
  }

  /** The browser's playback is the clock's: no marks. */
  mark(): void {}

  clear(): void {
    this.send({ type: 'clear' });
  }

  close(code: number, reason: string): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.close(code, reason);
  }

  private receive(frame: Frame): void {
    try {
      if (this.state === 'waiting') this.start(frame);
      else if (this.state === 'opening') this.keepEarly(frame);
      else if (this.state === 'open') this.forward(frame);
    } catch (error) {
      if (!(error instanceof FrameRefused)) return this.fail(error); // thrown from a listener, it would take the whole process down
      const reason = error.code === 1007 ? 'Invalid frame' : 'Frame not allowed';
      if (this.state === 'waiting') return this.refuseUnproven(error.code, reason, error.message); // no valid `start`
      this.send({ type: 'error', message: error.message });
      this.close(error.code, reason);
    }
  }

  private start(frame: Frame): void {
    if (frame.binary) throw new FrameRefused(1008, 'Send the start message before any audio');
    const message = parseMessage(frame.data);
    if (message.type !== 'start') throw new FrameRefused(1008, 'The first message must be {"type":"start",…}');
    const { token, sampleRate = VOICE_SAMPLE_RATE } = message;
    if (typeof token !== 'string' || token.length > 512) throw new FrameRefused(1008, 'start.token must be the conversation token');
    if (typeof sampleRate !== 'number' || !Number.isInteger(sampleRate) || sampleRate < 8_000 || sampleRate > 48_000) {
      throw new FrameRefused(1008, 'start.sampleRate must be a whole number from 8000 to 48000');
    }
    this.state = 'opening';
    this.sampleRate = sampleRate;
    this.opening = this.open(token).catch((error: unknown) => this.refuse(error));
  }

  /**
   * `start`: the address's budget (4429, before any lookup), the token (4404, counted against that budget), the
   * page (4403), the conversation's state (4410), a place on the instance (1013), its lease (4409), then the call.
   */
  private async open(token: string): Promise<void> {
    const { talk, calls, capacity } = this.services;
    const authorization = `Bearer ${token}`;
    const blocked = await this.client.blocked();
    if (blocked) return this.close(4429, blocked.message);
    if (!isUuid(this.client.conversationId)) return this.unknown();
    const access = await talk.authenticate(this.client.conversationId, authorization);
    if (!voiceOriginAllowed(access, this.client.origin, this.services.corsOrigins)) {
      return this.close(4403, 'This page may not open this conversation');
    }
    if ((await talk.view(access)).status === 'ended') return this.close(4410, 'Conversation ended');
    this.givePlaceBack = capacity.take();
    if (!this.givePlaceBack) return this.close(1013, 'No room for another call on this instance; try again later');
    if (!(await this.takeLease(access))) {
      if (this.state === 'opening') this.close(4409, 'The conversation already has a voice socket');
      return;
    }
    this.access = access;
    if (this.state !== 'opening') return; // the client went away meanwhile: closed() releases the lease
    // Set up before `ready`, so that every frame the client sends after it is heard and recorded.
    // The client's audio as it comes, at its rate: the call resamples it a slice at a time with the rest of its work.
    this.call = await calls.open({ access, authorization, address: this.client.address, inputSampleRate: this.sampleRate }, this);
    if (this.state !== 'opening') return; // closed() closes the call
    this.state = 'open';
    this.audioCreditAt = performance.now();
    this.send({ type: 'ready', sampleRate: VOICE_SAMPLE_RATE, input: calls.input });
    this.watch();
    this.call.begin();
    for (const frame of this.early.splice(0)) this.receive(frame);
  }

  /**
   * The conversation's voice lease: false when another socket is live on it. A socket that has just closed
   * (the client reconnecting) holds it until its call is stored, usually milliseconds: that is waited for, up to
   * the lease's length (an instance that died meanwhile lets it run out).
   */
  private async takeLease(access: ConversationAccess): Promise<boolean> {
    const { leases } = this.services;
    const waitUntil = performance.now() + this.timings.leaseSeconds * 1000;
    for (;;) {
      const taking = await leases.take(access.accountId, access.id, this.leaseId, this.timings.leaseSeconds);
      if (taking === 'taken') return true;
      if (taking === 'held' || this.state !== 'opening' || performance.now() >= waitUntil) return false;
      await sleep(LEASE_POLL_MS);
    }
  }

  /** Pings, the unsent-bytes check and the lease's renewal, while the call is open. */
  private watch(): void {
    this.timers.push(
      setInterval(() => {
        if (!this.answeredPing) return this.socket.terminate();
        this.answeredPing = false;
        this.socket.ping();
      }, this.timings.pingIntervalMs),
      setInterval(() => this.checkUnsent(), Math.min(1_000, this.timings.unsentGraceMs)),
    );
    this.renewal = setInterval(() => void this.renew(), (this.timings.leaseSeconds * 1000) / 3);
  }

  private checkUnsent(): void {
    if (this.socket.bufferedAmount <= MAX_UNSENT_BYTES) this.unsentSince = undefined;
    else if (this.unsentSince === undefined) this.unsentSince = performance.now();
    else if (performance.now() - this.unsentSince >= this.timings.unsentGraceMs) this.socket.terminate();
  }

  /** Keeps the lease; a conversation ended elsewhere (its end route, the idle job) ends the socket too. */
  private async renew(): Promise<void> {
    const access = this.access!;
    try {
      const status = await this.services.leases.renew(access.accountId, access.id, this.leaseId, this.timings.leaseSeconds);
      if (status === 'ended') {
        this.send({ type: 'ended' });
        this.close(1000, 'Conversation ended');
      } else if (status === undefined) this.close(4409, 'The conversation was taken over by another voice socket');
    } catch {
      // The database is unavailable for a moment: the lease has two more renewals before it runs out.
    }
  }

  private keepEarly(frame: Frame): void {
    if (this.early.length >= MAX_EARLY_FRAMES) throw new FrameRefused(1008, 'Wait for ready before sending more');
    this.early.push(frame);
  }

  private forward(frame: Frame): void {
    const call = this.call!;
    if (frame.binary) return call.audio(this.audio(frame.data));
    this.countText();
    const message = parseMessage(frame.data);
    if (message.type === 'text') {
      validatedBody({ text: message.text }, SendMessageDto)
        .then(
          (dto) => call.text(dto.text),
          (error: unknown) => this.send({ type: 'error', message: error instanceof HttpException ? error.message : 'Invalid text' }),
        )
        .catch((error: unknown) => this.fail(error));
    } else if (message.type === 'end') call.end().catch((error: unknown) => this.fail(error));
    else throw new FrameRefused(1008, `Unknown message type; expected "text" or "end"`);
  }

  /** A binary frame: 16-bit PCM at the announced rate, 10–200 ms, at most twice as fast as real time. */
  private audio(data: Buffer): Int16Array {
    if (data.length % 2 !== 0) throw new FrameRefused(1007, 'Audio frames are 16-bit samples: an even number of bytes');
    const ms = (data.length / 2 / this.sampleRate) * 1000;
    if (ms < MIN_FRAME_MS || ms > MAX_FRAME_MS) throw new FrameRefused(1008, 'Audio frames are 10 to 200 ms long');
    this.spendAudioCredit(ms);
    return copyPcm(data); // its own memory: the call keeps it until its turn comes
  }

  private spendAudioCredit(ms: number): void {
    const now = performance.now();
    this.audioCreditMs = Math.min(AUDIO_BURST_MS, this.audioCreditMs + (now - this.audioCreditAt) * AUDIO_SPEED_LIMIT);
    this.audioCreditAt = now;
    if (ms > this.audioCreditMs) throw new FrameRefused(1008, 'Audio faster than real time');
    this.audioCreditMs -= ms;
  }

  private countText(): void {
    const now = performance.now();
    if (now - this.textWindowStart >= 1_000) {
      this.textWindowStart = now;
      this.textFrames = 0;
    }
    if (++this.textFrames > TEXT_FRAMES_PER_SECOND) throw new FrameRefused(1008, 'Too many messages');
  }

  /** `start` was refused: a wrong token or unknown conversation (4404), one that has ended (4410). */
  private async refuse(error: unknown): Promise<void> {
    if (error instanceof HttpException && error.getStatus() === 404) return this.unknown();
    if (error instanceof HttpException && error.getStatus() === 410) return this.close(4410, 'Conversation ended');
    this.fail(error);
  }

  /** A wrong token, or a conversation that does not exist: the same 4404 (counted), whichever it was. */
  private async unknown(): Promise<void> {
    await this.countUnproven();
    this.close(4404, 'Unknown conversation');
  }

  /**
   * The socket proved no token (no `start` in time, a first frame that is not a valid one): counted against its
   * address before it is closed, so that the address's next handshake finds the count; frames meanwhile are dropped.
   */
  private refuseUnproven(code: number, reason: string, message?: string): void {
    this.state = 'refused';
    this.opening = this.countUnproven().then(() => {
      if (message) this.send({ type: 'error', message });
      this.close(code, reason);
    });
  }

  private async countUnproven(): Promise<void> {
    try {
      await this.client.countUnproven();
    } catch (error) {
      // The counters' store (Redis) is unreachable: the socket is refused all the same, uncounted.
      this.services.logger.error({ error: { name: (error as Error)?.name } }, 'A voice socket could not be counted');
    }
  }

  /** A fault of the service's (the database, the pipeline): the socket closes with 1011; the conversation goes on. */
  private fail(error: unknown): void {
    this.services.logger.error({ error: { name: (error as Error)?.name } }, 'A voice socket failed');
    this.send({ type: 'error', message: 'The call failed; please reconnect.' });
    this.close(1011, 'Internal error');
  }

  private async closed(): Promise<void> {
    this.state = 'closed';
    for (const timer of this.timers) clearTimeout(timer);
    this.early = [];
    await this.opening; // an open under way ends first (leaving its call, lease and place, if it got them, to close here)
    try {
      await this.closeCall();
    } finally {
      this.givePlaceBack?.(); // once the call is stored: until then it still costs the instance
    }
  }

  private async closeCall(): Promise<void> {
    if (!this.access) return;
    const lease = { accountId: this.access.accountId, conversationId: this.access.id, leaseId: this.leaseId };
    try {
      await closeUnderLease(this.services.leases, lease, async () => {
        try {
          await this.call?.close();
        } finally {
          clearInterval(this.renewal); // renewed while the call is stored, not after the lease is given back
        }
      });
    } catch (error) {
      this.services.logger.error({ error: { name: (error as Error)?.name } }, 'A voice call failed to close');
    }
  }
}

/**
 * The origin rule of the conversation's routes, for a socket: a widget conversation takes the pages its site allows,
 * an API conversation CORS_ORIGINS or no Origin (a server).
 */
function voiceOriginAllowed(rule: ConversationCorsRule, origin: string | undefined, corsOrigins: string[]): boolean {
  if (rule.allowedDomain === null && origin === undefined) return true;
  return conversationOriginAllowed(rule, origin, corsOrigins);
}

/** A text frame's JSON object; anything else is a 1007. */
function parseMessage(data: Buffer): { type?: unknown; [field: string]: unknown } {
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    throw new FrameRefused(1007, 'Text frames are JSON objects');
  }
  if (typeof message !== 'object' || message === null || Array.isArray(message))
    throw new FrameRefused(1007, 'Text frames are JSON objects');
  return message as { type?: unknown };
}
