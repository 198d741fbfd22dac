import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { ConversationEnds } from '../conversations/conversation-ends.service';
import { ConversationStarts } from '../conversations/conversation-starts.service';
import { ConversationTalk } from '../conversations/conversation-talk.service';
import type { EndedReason } from '../calls/call.entity';
import { CallTransport, VoiceCall, VoiceCalls } from '../voice/voice-call';
import { VoiceCapacity } from '../voice/voice-capacity';
import { closeUnderLease, VoiceLeasesRepository } from '../voice/voice-leases.repository';
import { CARRIER_SAMPLE_RATE, MulawCodec } from './mulaw-codec';
import { PhoneCallsRepository, StreamGrant } from './phone-calls.repository';
import { HeldStream, PhoneStreams } from './phone-streams';

/** The stream's timings; the tests shorten them. */
export interface MediaStreamTimings {
  /** For a `start` with a valid token after the upgrade (closed after, nothing created). */
  startTimeoutMs: number;
  /** Digits pressed within this of each other are one caller turn. */
  keypadGapMs: number;
  /** The lease's length; it is renewed every third of it. */
  leaseSeconds: number;
  /** Between pings; a carrier that has not answered the previous one by the next is dropped. */
  pingIntervalMs: number;
  /** How long the agent's last sentence may take to play, at most, before the call is hung up anyway. */
  lastSentenceMs: number;
  /** PHONE_MAX_CALL_SECONDS: a call that runs longer is ended (`max-duration`). */
  maxCallSeconds: number;
}

export const DEFAULT_STREAM_TIMINGS: MediaStreamTimings = {
  startTimeoutMs: 10_000,
  keypadGapMs: 2_000,
  leaseSeconds: 30,
  pingIntervalMs: 15_000,
  lastSentenceMs: 15_000,
  maxCallSeconds: 1_800,
};

export interface MediaStreamServices {
  phoneCalls: PhoneCallsRepository;
  starts: ConversationStarts;
  talk: ConversationTalk;
  ends: ConversationEnds;
  calls: VoiceCalls;
  leases: VoiceLeasesRepository;
  capacity: VoiceCapacity;
  streams: PhoneStreams;
  logger: Logger;
}

/**
 * The state of one stream: waiting for `start`, proving its token and opening the call, open, finishing (the
 * conversation ended on the service's side: the last sentence plays, then the carrier hangs up), or closed.
 */
type State = 'waiting' | 'opening' | 'open' | 'finishing' | 'closed';

/** Unsent bytes past which the agent's voice waits (each 20 ms frame is about 300 bytes of JSON). */
const MAX_UNSENT_BYTES = 64 * 1024;
/** A `media` payload, at most: 200 ms of μ-law in base64 (the carrier sends 20 ms). */
const MAX_PAYLOAD_BYTES = (CARRIER_SAMPLE_RATE * 200) / 1000;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Twilio's ids: a stream's `MZ…`, a call's `CA…` (34 characters); anything of this shape is echoed back safely. */
const STREAM_SID = /^[A-Za-z0-9]{2,64}$/;
const CALL_SID = /^CA[0-9a-fA-F]{32}$/;
/** The marks the pipeline sends (AgentVoice: `generation:frames`); an echo of anything else is not ours. */
const MAX_MARK_NAME = 32;
const DIGIT = /^[0-9*#A-D]$/;
/** The caller's `media` and `dtmf` kept while the call opens, at most (a second of audio): after `start`, the carrier sends at once. */
const MAX_EARLY_MEDIA = 50;
/** Digits in one keypad turn at most: more are a turn of their own. */
const MAX_KEYPAD_DIGITS = 32;
const REFUSED_TOKEN = 'No valid stream token';

type Message = Record<string, unknown>;
const objectOf = (value: unknown): Message | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Message) : undefined;

/**
 * One Twilio media stream (contract section 17): the carrier's side of a phone call, joined to the call's
 * conversation by the one-time token of its first `start`, then the call's transport (CallTransport). In, the
 * caller's μ-law (8 kHz) decoded for the pipeline, which resamples it; keypad digits, grouped into one turn while
 * they come within 2 s of each other; the marks the carrier echoes once the audio before them has played. Out, the
 * agent's voice as `media` (paced by the pipeline, at most a second ahead of the last mark echoed), `mark`s, and
 * `clear` when the caller interrupts. `stop`, or the socket closing, is the caller hanging up: the conversation
 * ends at once. The service hangs up (the agent, the end route, the maximum length) by letting the last sentence
 * play, asking the carrier to complete the call, and closing.
 *
 * Everything the carrier sends is checked: what is not JSON, an unknown event, an event out of place, a payload
 * too large or not base64, a digit that is not one, are ignored; nothing it sends can throw out of a listener.
 */
export class TwilioMediaStream implements CallTransport, HeldStream {
  readonly playback = 'marks';
  private state: State = 'waiting';
  private readonly leaseId = randomUUID();
  private readonly codec = new MulawCodec();
  private streamSid = '';
  private grant: StreamGrant | undefined;
  private call: VoiceCall | undefined;
  /** The start being proved and the call opened. */
  private opening: Promise<void> = Promise.resolve();
  private givePlaceBack: (() => void) | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private keypad: string[] = [];
  private keypadTimer: NodeJS.Timeout | undefined;
  private early: Message[] = [];
  private answeredPing = true;
  /** The conversation's end, once asked for (by the stream's `stop`, a fault, the maximum length): the socket's close waits for it. */
  private ending: Promise<boolean> | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly services: MediaStreamServices,
    private readonly timings: MediaStreamTimings,
    onClosed: () => void,
  ) {
    this.timers.push(setTimeout(() => this.state === 'waiting' && this.refuse(), timings.startTimeoutMs));
    socket.on('message', (data: Buffer, binary: boolean) => this.receive(data, binary));
    socket.on('pong', () => (this.answeredPing = true));
    socket.on('error', () => undefined); // a protocol error closes the socket; 'close' follows
    socket.on('close', () => void this.closed().finally(onClosed));
  }

  // ---- CallTransport: what the call sends the carrier ----

  /** The browser protocol's messages have no place on a carrier's stream. */
  send(): void {}

  sendAudio(frame: Int16Array): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return true; // gone: nothing to wait for
    if (this.socket.bufferedAmount > MAX_UNSENT_BYTES) return false;
    const payload = Buffer.from(this.codec.encode(frame)).toString('base64');
    this.socket.send(JSON.stringify({ event: 'media', streamSid: this.streamSid, media: { payload } }));
    return true;
  }

  mark(name: string): void {
    this.sendEvent({ event: 'mark', streamSid: this.streamSid, mark: { name } });
  }

  clear(): void {
    this.sendEvent({ event: 'clear', streamSid: this.streamSid });
  }

  /**
   * The call is over for the pipeline: after `ended` (1000: the conversation had ended) the call is hung up; after a
   * fault (1011) or with the conversation gone (4404) the conversation is ended (`error`), which hangs it up.
   */
  close(code: number): void {
    if (code === 1000) return this.conversationEnded();
    if (this.state === 'open') {
      void this.endConversation('error').then((ended) => ended || this.hangUpSocket(1011, 'Internal error'));
    } else {
      void this.endConversation('error');
      this.hangUpSocket(1011, 'Internal error');
    }
  }

  // ---- HeldStream ----

  /** The conversation ended on the service's side: the last sentence plays, the carrier completes the call, the stream closes. */
  conversationEnded(): void {
    if (this.state !== 'open') return;
    this.state = 'finishing';
    void this.finish();
  }

  private async finish(): Promise<void> {
    const grant = this.grant!;
    try {
      await this.call!.finish(this.timings.lastSentenceMs);
    } catch (error) {
      this.logFailure(error, "A phone call's last sentence failed");
    }
    await this.services.streams.hangUpCarrierCall(grant.accountId, grant.conversationId);
    this.hangUpSocket(1000, 'Call ended');
  }

  // ---- The carrier's messages ----

  private receive(data: Buffer, binary: boolean): void {
    try {
      if (binary || this.state === 'closed') return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.toString('utf8'));
      } catch {
        return; // not JSON: ignored, as the carrier ignores what it cannot read
      }
      const message = objectOf(parsed);
      if (!message) return;
      switch (message.event) {
        case 'start':
          if (this.state === 'waiting') this.start(message);
          return;
        case 'media':
          if (this.state === 'open') this.media(message);
          else if (this.state === 'opening' && this.early.length < MAX_EARLY_MEDIA) this.early.push(message);
          return;
        case 'mark':
          if (this.state === 'open' || this.state === 'finishing') this.marked(message);
          return;
        case 'dtmf':
          if (this.state === 'open') this.digit(message);
          else if (this.state === 'opening' && this.early.length < MAX_EARLY_MEDIA) this.early.push(message);
          return;
        case 'stop':
          return this.hungUp();
        default:
          return; // `connected`, and events this service does not use
      }
    } catch (error) {
      // Thrown from a listener, it would take the whole process down.
      this.logFailure(error, 'A media stream message failed');
      this.close(1011);
    }
  }

  /**
   * `start`: the stream's id, the audio's format, then the token: a stream that proves none is closed, nothing
   * created. It is not counted against the address, as a voice socket is: the address is the carrier's, which
   * presents a late token in good faith (a call that ended as its stream connected), and a token of 256 random bits
   * is not guessed.
   */
  private start(message: Message): void {
    const start = objectOf(message.start);
    const format = objectOf(start?.mediaFormat);
    const token = objectOf(start?.customParameters)?.token;
    const streamSid = start?.streamSid ?? message.streamSid;
    const callSid = typeof start?.callSid === 'string' && CALL_SID.test(start.callSid) ? start.callSid : null;
    const mulaw = format?.encoding === 'audio/x-mulaw' && format.sampleRate === CARRIER_SAMPLE_RATE && format.channels === 1;
    if (typeof streamSid !== 'string' || !STREAM_SID.test(streamSid) || typeof token !== 'string' || !mulaw) return this.refuse();
    this.streamSid = streamSid;
    this.state = 'opening';
    this.opening = this.open(token, callSid).catch((error: unknown) => {
      this.logFailure(error, 'A media stream failed to open');
      this.close(1011);
    });
  }

  /**
   * A place on the instance (1013 without one: the token is left untouched and the carrier's status ends the call),
   * the token (1008 for one that opens nothing), the conversation's bearer token and voice lease, then the call,
   * whose greeting is said first.
   */
  private async open(token: string, callSidOfStart: string | null): Promise<void> {
    const { phoneCalls, starts, talk, calls, leases, capacity, streams } = this.services;
    this.givePlaceBack = capacity.take();
    if (!this.givePlaceBack) return this.hangUpSocket(1013, 'No room for another call on this instance');
    const grant = await phoneCalls.consumeStreamToken(token);
    if (!grant) return this.hangUpSocket(1008, REFUSED_TOKEN);
    this.grant = { ...grant, callSid: grant.callSid ?? callSidOfStart };
    const { accountId, conversationId } = grant;
    const bearer = await starts.handOver(accountId, conversationId);
    if (!bearer || this.state !== 'opening') return this.hangUpSocket(1000, 'Conversation ended');
    const authorization = `Bearer ${bearer}`;
    const access = await talk.authenticate(conversationId, authorization);
    if ((await leases.take(accountId, conversationId, this.leaseId, this.timings.leaseSeconds)) !== 'taken') {
      throw new Error('the voice lease of a phone conversation was held');
    }
    streams.hold(conversationId, this);
    if (this.state !== 'opening') return; // the carrier went away meanwhile: closed() ends the conversation
    const line = { inputSampleRate: CARRIER_SAMPLE_RATE, recordingSampleRate: CARRIER_SAMPLE_RATE } as const;
    this.call = await calls.open({ access, authorization, address: 'carrier', ...line }, this);
    if (this.state !== 'opening') return; // closed() closes the call
    this.state = 'open';
    this.watch();
    this.call.begin();
    for (const message of this.early.splice(0)) {
      if (message.event === 'dtmf') this.digit(message);
      else this.media(message);
    }
  }

  /** Pings, the lease's renewal, and the call's maximum length, while the call is open. */
  private watch(): void {
    this.timers.push(
      setInterval(() => {
        if (!this.answeredPing) return this.socket.terminate();
        this.answeredPing = false;
        this.socket.ping();
      }, this.timings.pingIntervalMs),
      setInterval(() => void this.renew(), (this.timings.leaseSeconds * 1000) / 3),
      setTimeout(() => this.state === 'open' && void this.endConversation('max-duration'), this.timings.maxCallSeconds * 1000),
    );
  }

  /** Keeps the lease; a conversation ended elsewhere, whose notification this instance missed, is noticed here. */
  private async renew(): Promise<void> {
    const { accountId, conversationId } = this.grant!;
    try {
      const status = await this.services.leases.renew(accountId, conversationId, this.leaseId, this.timings.leaseSeconds);
      if (status !== 'active') this.conversationEnded();
    } catch {
      // The database is unavailable for a moment: the lease has two more renewals before it runs out.
    }
  }

  private media(message: Message): void {
    const media = objectOf(message.media);
    const payload = media?.payload;
    if (typeof payload !== 'string' || (media!.track !== undefined && media!.track !== 'inbound')) return;
    if (payload.length === 0 || payload.length > Math.ceil(MAX_PAYLOAD_BYTES / 3) * 4 || !BASE64.test(payload)) return;
    this.call!.audio(this.codec.decode(Buffer.from(payload, 'base64')));
  }

  private marked(message: Message): void {
    const name = objectOf(message.mark)?.name;
    if (typeof name === 'string' && name.length <= MAX_MARK_NAME) this.call!.played(name);
  }

  /** A keypad digit: with those pressed within the gap before it, one caller turn, `(keypad) 1 2 3`. */
  private digit(message: Message): void {
    const digit = objectOf(message.dtmf)?.digit;
    if (typeof digit !== 'string' || !DIGIT.test(digit)) return;
    this.keypad.push(digit);
    clearTimeout(this.keypadTimer);
    if (this.keypad.length >= MAX_KEYPAD_DIGITS) this.pressed();
    else this.keypadTimer = setTimeout(() => this.pressed(), this.timings.keypadGapMs);
  }

  private pressed(): void {
    clearTimeout(this.keypadTimer);
    const digits = this.keypad.splice(0);
    if (digits.length > 0 && this.state === 'open') this.call!.text(`(keypad) ${digits.join(' ')}`);
  }

  /** `stop`: the call is over on the carrier's side (the caller hung up): the conversation ends at once, the socket closes. */
  private hungUp(): void {
    if (this.state === 'open' || this.state === 'opening') void this.endConversation('caller-hung-up');
    this.hangUpSocket(1000, 'Stream stopped');
  }

  // ---- Ends ----

  /**
   * Ends the conversation, once (asked again, the first end's promise: false when it had ended already, or failed).
   * Its end tells PhoneStreams, which hangs the call up when `reason` is the service's.
   */
  private endConversation(reason: EndedReason): Promise<boolean> {
    if (!this.grant) return Promise.resolve(false);
    const { accountId, conversationId } = this.grant;
    this.ending ??= this.services.ends.endNow(accountId, conversationId, reason).catch((error: unknown) => {
      this.logFailure(error, 'A phone conversation could not be ended');
      return false;
    });
    return this.ending;
  }

  /** No valid `start` in time, or a malformed one: closed; nothing was created. */
  private refuse(): void {
    this.state = 'closed';
    this.hangUpSocket(1008, REFUSED_TOKEN);
  }

  private hangUpSocket(code: number, reason: string): void {
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) this.socket.close(code, reason);
  }

  private sendEvent(message: object): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  /**
   * The socket closed, by either side: a call still open ends (the caller hung up, or `error` after a fault of the
   * service's); the call stores its recording; the lease and the place on the instance are given back.
   */
  private async closed(): Promise<void> {
    const wasOpen = this.state === 'open' || this.state === 'opening';
    this.state = 'closed';
    for (const timer of this.timers) clearTimeout(timer);
    clearTimeout(this.keypadTimer);
    this.early = [];
    await this.opening; // an open under way ends first (leaving its call, lease and place, if it got them, to close here)
    try {
      // The socket closing is the caller hanging up; an end already asked for (`stop`) is waited for, the call stored after it.
      if (wasOpen || this.ending) await this.endConversation('caller-hung-up');
      await this.closeCall();
    } finally {
      this.givePlaceBack?.(); // once the call is stored: until then it still costs the instance
    }
  }

  private async closeCall(): Promise<void> {
    if (!this.grant) return;
    const { accountId, conversationId } = this.grant;
    const { leases, streams } = this.services;
    streams.release(conversationId, this);
    try {
      await closeUnderLease(leases, { accountId, conversationId, leaseId: this.leaseId }, async () => this.call?.close());
    } catch (error) {
      this.logFailure(error, 'A phone call failed to close');
    }
  }

  private logFailure(error: unknown, message: string): void {
    this.services.logger.error({ error: { name: (error as Error)?.name } }, message);
  }
}
