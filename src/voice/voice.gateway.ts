import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { IncomingMessage, Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import proxyAddr from 'proxy-addr';
import { WebSocketServer } from 'ws';
import { errorResponse } from '../common/error-response.dto';
import { isUuid } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { ConversationTalk } from '../conversations/conversation-talk.service';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from '../rate-limit/rate-limit-storage';
import { clientAddressKey, counterKey, retryAfterSeconds, WIDGET_THROTTLER, widgetTracker } from '../rate-limit/rate-limit';
import { VoiceCalls } from './voice-call';
import { NO_ROOM_RETRY_AFTER_SECONDS, VoiceCapacity } from './voice-capacity';
import { VoiceCredentialLimit, VoiceRequest } from './voice-credential-limit';
import { VoiceLeasesRepository } from './voice-leases.repository';
import { VoiceSession, VoiceSessionServices, VoiceSessionTimings, VoiceSocketClient } from './voice-session';

const VOICE_PATH = /^\/conversations\/([^/?#]+)\/voice\/?(?:\?.*)?$/i;
/** Above every legal frame (200 ms at 48 kHz is 19,200 bytes): `ws` closes with 1009 beyond it. */
const MAX_PAYLOAD = 256 * 1024;

/** How long a socket told to close (1001) at shutdown gets to answer before it is cut. */
const CLOSE_GRACE_MS = 1_000;

/** The session timings (the tests shorten them). */
export const VOICE_SESSION_TIMINGS = Symbol('VOICE_SESSION_TIMINGS');

/**
 * Another WebSocket route on the API's server (a carrier's media stream, src/telephony): whether an upgrade
 * request's URL is its, and what takes such a request (with the client address Express would give it). A failure
 * is answered 500 on the raw socket.
 */
export interface SocketRoute {
  matches(url: string): boolean;
  upgrade(request: VoiceRequest, socket: Duplex, head: Buffer): void | Promise<void>;
}

/**
 * `GET /conversations/{conversationId}/voice` on the REST API's own server: the HTTP server's `upgrade` event,
 * since Nest's WebSocket adapter serves exact paths only. Before the upgrade it refuses, answering as any route
 * would and without any database work: an instance with no room for another call (503), an address over the budget
 * of credentials that prove nothing (429) and the widget rate limit (429). It looks nothing up about the
 * conversation, so that its answer is the same whether the conversation exists or not: the token (4404) and the
 * page's origin (4403) are checked at `start` (VoiceSession). An upgrade to another path (or to h2c) goes back to
 * Express as an ordinary request.
 */
@Injectable()
export class VoiceGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Voice');
  private readonly sockets = new WebSocketServer({
    noServer: true,
    clientTracking: true,
    perMessageDeflate: false,
    maxPayload: MAX_PAYLOAD,
  });
  private readonly sessions = new Set<Promise<void>>();
  private readonly routes: SocketRoute[] = [];
  private readonly services: VoiceSessionServices;
  private stopping = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    talk: ConversationTalk,
    leases: VoiceLeasesRepository,
    calls: VoiceCalls,
    private readonly capacity: VoiceCapacity,
    private readonly credentials: VoiceCredentialLimit,
    @Inject(RATE_LIMIT_STORAGE) private readonly rateLimits: RateLimitStorage,
    @Inject(VOICE_SESSION_TIMINGS) private readonly timings: VoiceSessionTimings,
    @InjectConfig() private readonly config: AppConfig,
  ) {
    this.services = { talk, leases, calls, capacity, corsOrigins: config.corsOrigins, logger: this.logger };
  }

  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Node removes its own error listener from an upgrade's socket: a client that resets it while the checks
      // below wait for the rate-limit counters would otherwise raise an uncaught error (ws adds its own at the upgrade).
      socket.on('error', () => socket.destroy());
      this.upgrade(request, socket, head).catch((error: unknown) => {
        this.logger.error({ error: { name: (error as Error)?.name } }, 'A voice socket handshake failed');
        refuse(socket, 500, 'Internal server error');
      });
    });
  }

  /** Serves another WebSocket path on this server (registered before the application listens). */
  addRoute(route: SocketRoute): void {
    this.routes.push(route);
  }

  /** The instance is stopping: every voice socket closes with 1001 (the conversation goes on elsewhere). */
  async closeAll(): Promise<void> {
    this.stopping = true;
    for (const socket of this.sockets.clients) socket.close(1001, 'The server is restarting; reconnect');
    // A client that does not answer the close would hold the shutdown for ws's own 30 s close timeout.
    const cut = setTimeout(() => this.sockets.clients.forEach((socket) => socket.terminate()), CLOSE_GRACE_MS);
    await Promise.allSettled([...this.sessions]);
    clearTimeout(cut);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.closeAll();
  }

  private async upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const match = VOICE_PATH.exec(request.url ?? '');
    const webSocket = request.headers.upgrade?.toLowerCase() === 'websocket';
    const route = match || !webSocket ? undefined : this.routes.find((candidate) => candidate.matches(request.url ?? ''));
    if (route) return route.upgrade(withClientAddress(request, proxyAddr(request, this.trustProxy())), socket, head);
    if (!match || !webSocket) return this.toExpress(request, socket);
    if (this.stopping) return refuse(socket, 503, 'The server is restarting; reconnect');
    if (this.capacity.full) {
      const retryAfter = String(NO_ROOM_RETRY_AFTER_SECONDS);
      return refuse(socket, 503, `No room for another call on this instance; retry in ${retryAfter} s`, { 'Retry-After': retryAfter });
    }
    const conversationId = match[1].toLowerCase();
    const client = withClientAddress(request, proxyAddr(request, this.trustProxy()));
    const blocked = await this.credentials.blocked(client);
    if (blocked) return refuse(socket, 429, blocked.message, blocked.headers);
    // An id that cannot be a conversation's is an unknown conversation: upgraded, then closed with 4404 after `start`.
    if (isUuid(conversationId)) {
      const retryAfter = await this.overRateLimit(conversationId, clientAddressKey(client));
      if (retryAfter) return refuse(socket, 429, `Too many requests; retry in ${retryAfter} s`, { 'Retry-After': String(retryAfter) });
    }
    if (this.stopping) return refuse(socket, 503, 'The server is restarting; reconnect');
    this.sockets.handleUpgrade(request, socket, head, (webSocket) => {
      let closed!: () => void;
      const done = new Promise<void>((resolve) => (closed = resolve));
      this.sessions.add(done);
      new VoiceSession(webSocket, this.socketClient(client, conversationId), this.services, this.timings, () => {
        this.sessions.delete(done);
        closed();
      });
    });
  }

  private socketClient(request: VoiceRequest, conversationId: string): VoiceSocketClient {
    return {
      conversationId,
      address: clientAddressKey(request),
      origin: request.headers.origin,
      blocked: () => this.credentials.blocked(request),
      countUnproven: () => this.credentials.count(request),
    };
  }

  /**
   * The widget rate limit, in the very counter of the conversation's HTTP routes (RateLimitGuard's key for the
   * widget throttler: its name, the conversation, the address); seconds to wait when over.
   */
  private async overRateLimit(conversationId: string, address: string): Promise<number> {
    const { widgetRateLimit: limit, widgetRateLimitWindowSeconds: windowSeconds } = this.config;
    const ttl = windowSeconds * 1000;
    const key = counterKey(WIDGET_THROTTLER, widgetTracker(conversationId, address));
    const record = await this.rateLimits.increment(key, ttl, limit, ttl, WIDGET_THROTTLER);
    return record.isBlocked ? retryAfterSeconds(record.timeToBlockExpire) : 0;
  }

  private trustProxy(): (address: string, hop: number) => boolean {
    return this.adapterHost.httpAdapter
      .getInstance<{ get(name: string): (address: string, hop: number) => boolean }>()
      .get('trust proxy fn');
  }

  /**
   * Any other upgrade request (another path, `Upgrade: h2c`) is answered by Express as an ordinary request, as it
   * would be without this listener: Node hands every request with an Upgrade header to `upgrade` listeners.
   */
  private toExpress(request: IncomingMessage, socket: Duplex): void {
    const hasBody = request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0';
    if (hasBody || request.headers['transfer-encoding'] !== undefined)
      return refuse(socket, 400, 'A request with an Upgrade header may not have a body');
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket as import('node:net').Socket);
    response.on('finish', () => {
      response.detachSocket(socket as import('node:net').Socket);
      (socket as import('node:net').Socket).destroySoon();
    });
    request.push(null);
    (this.adapterHost.httpAdapter.getHttpServer() as Server).emit('request', request, response);
  }
}

/**
 * The upgrade request with the client address Express would give it: `ip` is a getter of Express's requests (this
 * server makes them with Express's prototype), which needs the `app` an upgrade request never gets.
 */
function withClientAddress(request: IncomingMessage, ip: string): VoiceRequest {
  return Object.defineProperty(request, 'ip', { value: ip }) as VoiceRequest;
}

/** An HTTP answer written on the raw socket before the upgrade, in the contract's error shape; then the socket ends. */
export function refuse(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(errorResponse(status, message));
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
