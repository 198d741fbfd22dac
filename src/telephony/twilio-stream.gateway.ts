import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { ConversationEnds } from '../conversations/conversation-ends.service';
import { ConversationStarts } from '../conversations/conversation-starts.service';
import { ConversationTalk } from '../conversations/conversation-talk.service';
import { VoiceCalls } from '../voice/voice-call';
import { NO_ROOM_RETRY_AFTER_SECONDS, VoiceCapacity } from '../voice/voice-capacity';
import type { VoiceRequest } from '../voice/voice-credential-limit';
import { VoiceLeasesRepository } from '../voice/voice-leases.repository';
import { refuse, VoiceGateway } from '../voice/voice.gateway';
import { PhoneCallsRepository } from './phone-calls.repository';
import { PhoneStreams } from './phone-streams';
import { MediaStreamServices, MediaStreamTimings, TwilioMediaStream } from './twilio-media-stream';

/** The media stream's path (TwiML's `<Stream url>`, streamUrlOf). */
const STREAM_PATH = /^\/telephony\/twilio\/stream\/?(?:\?.*)?$/i;
/**
 * Above every message the carrier sends (a 20 ms `media` is about 400 bytes, a `start` with its parameters a few
 * KiB): `ws` closes with 1009 beyond it.
 */
const MAX_PAYLOAD = 64 * 1024;
/** How long a stream told to close (1001) at shutdown gets to answer before it is cut. */
const CLOSE_GRACE_MS = 1_000;

/** The streams' timings (the tests shorten them). */
export const MEDIA_STREAM_TIMINGS = Symbol('MEDIA_STREAM_TIMINGS');

/**
 * `GET /telephony/twilio/stream` upgraded to a WebSocket: the carrier's media streams (TwilioMediaStream), on the
 * API's own server through VoiceGateway's upgrade listener. Admitted as the voice socket is: an instance with no
 * room for another spoken call (VOICE_MAX_CALLS, shared with the browsers') or stopping answers 503 before the
 * upgrade, and a stream takes its place at `start`. Nothing is looked up before `start`.
 */
@Injectable()
export class TwilioStreamGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Telephony');
  private readonly sockets = new WebSocketServer({
    noServer: true,
    clientTracking: true,
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD,
  });
  private readonly streams = new Set<Promise<void>>();
  private readonly services: MediaStreamServices;
  private stopping = false;

  constructor(
    private readonly voiceGateway: VoiceGateway,
    private readonly capacity: VoiceCapacity,
    @Inject(MEDIA_STREAM_TIMINGS) private readonly timings: MediaStreamTimings,
    phoneCalls: PhoneCallsRepository,
    starts: ConversationStarts,
    talk: ConversationTalk,
    ends: ConversationEnds,
    calls: VoiceCalls,
    leases: VoiceLeasesRepository,
    phoneStreams: PhoneStreams,
  ) {
    this.services = {
      phoneCalls,
      starts,
      talk,
      ends,
      calls,
      leases,
      capacity,
      streams: phoneStreams,
      logger: this.logger,
    };
  }

  onApplicationBootstrap(): void {
    this.voiceGateway.addRoute({
      matches: (url) => STREAM_PATH.test(url),
      upgrade: (request, socket, head) => this.upgrade(request, socket, head),
    });
  }

  /** The instance is stopping: every stream closes with 1001 (the carrier then ends its call). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const socket of this.sockets.clients) socket.close(1001, 'The server is restarting');
    const cut = setTimeout(() => this.sockets.clients.forEach((socket) => socket.terminate()), CLOSE_GRACE_MS);
    await Promise.allSettled([...this.streams]);
    clearTimeout(cut);
  }

  private upgrade(request: VoiceRequest, socket: Duplex, head: Buffer): void {
    if (this.stopping) return refuse(socket, 503, 'The server is restarting');
    if (this.capacity.full) {
      const retryAfter = String(NO_ROOM_RETRY_AFTER_SECONDS);
      return refuse(socket, 503, `No room for another call on this instance; retry in ${retryAfter} s`, { 'Retry-After': retryAfter });
    }
    this.sockets.handleUpgrade(request, socket, head, (webSocket) => {
      let closed!: () => void;
      const done = new Promise<void>((resolve) => (closed = resolve));
      this.streams.add(done);
      new TwilioMediaStream(webSocket, this.services, this.timings, () => {
        this.streams.delete(done);
        closed();
      });
    });
  }
}
