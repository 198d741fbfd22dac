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
import { conversationOriginAllowed } from '../conversations/conversation-cors';
import { ConversationTalk } from '../conversations/conversation-talk.service';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from '../rate-limit/rate-limit-storage';
import { clientAddressKey, retryAfterSeconds } from '../rate-limit/rate-limit';
import { VoiceCalls } from './voice-call';
import { VoiceLeasesRepository } from './voice-leases.repository';
import { VoiceSession, VoiceSessionTimings } from './voice-session';

const VOICE_PATH = /^\/conversations\/([^/?#]+)\/voice\/?(?:\?.*)?$/i;
/** Above every legal frame (200 ms at 48 kHz is 19,200 bytes): `ws` closes with 1009 beyond it. */
const MAX_PAYLOAD = 256 * 1024;

/** How long a socket told to close (1001) at shutdown gets to answer before it is cut. */
const CLOSE_GRACE_MS = 1_000;

/** The session timings (the tests shorten them). */
export const VOICE_SESSION_TIMINGS = Symbol('VOICE_SESSION_TIMINGS');

/**
 * `GET /conversations/{conversationId}/voice` on the REST API's own server: the HTTP server's `upgrade` event,
 * since Nest's WebSocket adapter serves exact paths only. Before the upgrade it applies the conversation's
 * origin rule (403) and the widget rate limit (429), answering as any route would; an upgrade to another path
 * (or to h2c) goes back to Express as an ordinary request. After the upgrade each socket is a VoiceSession.
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
  private stopping = false;

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly talk: ConversationTalk,
    private readonly leases: VoiceLeasesRepository,
    private readonly calls: VoiceCalls,
    @Inject(RATE_LIMIT_STORAGE) private readonly rateLimits: RateLimitStorage,
    @Inject(VOICE_SESSION_TIMINGS) private readonly timings: VoiceSessionTimings,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter.getHttpServer() as Server;
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      // Node removes its own error listener from an upgrade's socket: a client that resets it while the checks
      // below wait for the database would otherwise raise an uncaught error (ws adds its own at the upgrade).
      socket.on('error', () => socket.destroy());
      this.upgrade(request, socket, head).catch((error: unknown) => {
        this.logger.error({ error: { name: (error as Error)?.name } }, 'A voice socket handshake failed');
        refuse(socket, 500, 'Internal server error');
      });
    });
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
    if (!match || request.headers.upgrade?.toLowerCase() !== 'websocket') return this.toExpress(request, socket);
    if (this.stopping) return refuse(socket, 503, 'The server is restarting; reconnect');
    const conversationId = match[1].toLowerCase();
    const address = clientAddressKey({ ip: proxyAddr(request, this.trustProxy()) });
    // An id that cannot be a conversation's is an unknown conversation: upgraded, then closed with 4404 after `start`.
    if (isUuid(conversationId)) {
      const retryAfter = await this.overRateLimit(conversationId, address);
      if (retryAfter) return refuse(socket, 429, `Too many requests; retry in ${retryAfter} s`, { 'Retry-After': String(retryAfter) });
      if (!(await this.originAllowed(conversationId, request.headers.origin))) {
        return refuse(socket, 403, 'This page may not open this conversation');
      }
    }
    if (this.stopping) return refuse(socket, 503, 'The server is restarting; reconnect');
    this.sockets.handleUpgrade(request, socket, head, (webSocket) => {
      let closed!: () => void;
      const done = new Promise<void>((resolve) => (closed = resolve));
      this.sessions.add(done);
      const services = { talk: this.talk, leases: this.leases, calls: this.calls, logger: this.logger };
      new VoiceSession(webSocket, conversationId, address, services, this.timings, () => {
        this.sessions.delete(done);
        closed();
      });
    });
  }

  /**
   * The origin rule of the conversation's routes at the handshake: a widget conversation takes the pages its site
   * allows, an API conversation CORS_ORIGINS or no Origin (a server). An unknown conversation is not revealed
   * here: its socket is closed with 4404 after `start`, as a wrong token's.
   */
  private async originAllowed(conversationId: string, origin: string | undefined): Promise<boolean> {
    const rule = await this.talk.corsRule(conversationId).catch(() => undefined);
    if (!rule) return true;
    if (rule.allowedDomain === null && origin === undefined) return true;
    return conversationOriginAllowed(rule, origin, this.config.corsOrigins);
  }

  /**
   * The widget rate limit, in the very counter of the conversation's HTTP routes (RateLimitGuard's key for the
   * widget throttler: its name, the conversation, the address); seconds to wait when over.
   */
  private async overRateLimit(conversationId: string, address: string): Promise<number> {
    const { widgetRateLimit: limit, widgetRateLimitWindowSeconds: windowSeconds } = this.config;
    const ttl = windowSeconds * 1000;
    const record = await this.rateLimits.increment(`widget:${conversationId}|${address}`, ttl, limit, ttl, 'widget');
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

/** An HTTP answer written on the raw socket before the upgrade, in the contract's error shape; then the socket ends. */
function refuse(socket: Duplex, status: number, message: string, headers: Record<string, string> = {}): void {
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
