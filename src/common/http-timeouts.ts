import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AppConfig } from '../config/config';

export interface HttpTimeouts {
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveMs: number;
  /** How long a client may take to send a request's headers (slowloris). */
  headersMs: number;
  /** How long a client may take to send a request's body, from its headers (uploads aside: allowUploadTime); 0: no limit. */
  requestMs: number;
  /** The same for an upload (allowUploadTime); 0: no limit. */
  uploadMs: number;
  /** How long a connection may stay silent in the middle of a request (a stalled upload) before it is closed. */
  idleMs: number;
}

export const HTTP_TIMEOUTS: HttpTimeouts = {
  // Longer than the idle timeouts of the load balancers in front (AWS ALB and nginx: 60 s), so that the
  // balancer, not the server, closes an idle connection: otherwise it can send a request on a connection
  // the server is closing at that moment, and answer the client 502.
  keepAliveMs: 65_000,
  // Longer than keepAliveMs (Node's own advice: a shorter one can cut a keep-alive connection that is
  // about to receive its next request), and still a bound on a client that trickles its headers.
  headersMs: 66_000,
  // HTTP_REQUEST_TIMEOUT_MS and HTTP_UPLOAD_TIMEOUT_MS (httpTimeouts): without a bound, a client sending a byte
  // a minute held its connection, and its request, for ever.
  requestMs: 60_000,
  uploadMs: 3_600_000,
  idleMs: 120_000,
};

/** The timeouts, with the bounds on receiving a request from the configuration. */
export const httpTimeouts = (config: Pick<AppConfig, 'httpRequestTimeoutMs' | 'httpUploadTimeoutMs'>): HttpTimeouts => ({
  ...HTTP_TIMEOUTS,
  requestMs: config.httpRequestTimeoutMs,
  uploadMs: config.httpUploadTimeoutMs,
});

/**
 * Sets the timeouts of an HTTP server (before or after it listens: Node reads them per connection). Node's own
 * whole-request limit (`requestTimeout`) is one for every route, so it stays off: each request with a body gets a
 * deadline of its own instead (limitRequestTime), which an upload route lengthens (allowUploadTime).
 */
export function applyHttpTimeouts(server: Server, timeouts: HttpTimeouts = HTTP_TIMEOUTS): void {
  server.keepAliveTimeout = timeouts.keepAliveMs;
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = 0;
  server.timeout = timeouts.idleMs;
  if (timeouts.requestMs > 0)
    server.prependListener('request', (request, response) => limitRequestTime(server, request, response, timeouts));
}

/** How long a cut connection stays open after its 408, for the client to read it, before it is destroyed. */
const LINGER_MS = 2_000;

const DEADLINE = Symbol('requestDeadline');
type TimedRequest = IncomingMessage & { [DEADLINE]?: { timer: NodeJS.Timeout; cut: () => void; uploadMs: number } };

const hasBody = (request: IncomingMessage) =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

/** Arms the deadline of a request with a body: cut once `requestMs` has passed without the whole body. */
function limitRequestTime(server: Server, request: TimedRequest, response: ServerResponse, { requestMs, uploadMs }: HttpTimeouts): void {
  if (!hasBody(request)) return;
  const cut = () => cutIncomplete(server, request, response);
  request[DEADLINE] = { timer: setTimeout(cut, requestMs).unref(), cut, uploadMs };
  request.once('close', () => clearTimeout(request[DEADLINE]!.timer));
}

/**
 * Gives a request the upload bound (HTTP_UPLOAD_TIMEOUT_MS) in place of the request bound, counted from its start:
 * for a route that streams its own body, once the request is authenticated and counted (JsonBodyGuard), so that a
 * request refused before has only the request bound to send (and have skipped) its body.
 */
export function allowUploadTime(request: TimedRequest): void {
  const deadline = request[DEADLINE];
  if (!deadline) return;
  clearTimeout(deadline.timer);
  if (deadline.uploadMs > 0) deadline.timer = setTimeout(deadline.cut, deadline.uploadMs).unref();
}

/**
 * A request whose body has not all arrived by its deadline. Not yet answered: the 408 Node gives when its own
 * request timeout fires, through the server's `clientError` listener (answerClientErrors: in the API's error
 * shape), and the connection is destroyed LINGER_MS later if the client has not closed it by then. Answered
 * already (its body was being skipped), or behind another response on the connection: destroyed at once.
 */
function cutIncomplete(server: Server, request: IncomingMessage, response: ServerResponse): void {
  if (request.complete) return;
  const socket = request.socket;
  const error = Object.assign(new Error('The request was not received in time'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
  if (!response.headersSent && response.socket === socket && server.emit('clientError', error, socket)) {
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  } else {
    socket.destroy();
  }
}
