import type { Server } from 'node:http';

export interface HttpTimeouts {
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveMs: number;
  /** How long a client may take to send a request's headers (slowloris). */
  headersMs: number;
  /** How long a client may take to send a whole request; 0: no limit. */
  requestMs: number;
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
  // None: a 200 MiB recording on a slow link takes longer than Node's default of 300 s. A stalled upload is
  // cut by idleMs instead, however long a steady one takes.
  requestMs: 0,
  idleMs: 120_000,
};

/** Sets the timeouts of an HTTP server (before or after it listens: Node reads them per connection). */
export function applyHttpTimeouts(server: Server, timeouts: HttpTimeouts = HTTP_TIMEOUTS): void {
  server.keepAliveTimeout = timeouts.keepAliveMs;
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.timeout = timeouts.idleMs;
}
