import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request a receiver got: its headers and its raw body, as a Standard Webhooks verifier needs them. */
export interface ReceivedDelivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  /** performance.now() when the request's headers arrived. */
  receivedAt: number;
  /** Date.now() then: the wall clock, which the service's timestamps use. */
  receivedAtMs: number;
}

/** How to answer the n-th request (0-based): a status and body, or `hang` (never answer); a promise holds the request until it settles. */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';
export type Responder = (delivery: ReceivedDelivery, index: number) => Answer | Promise<Answer>;

export interface Receiver {
  /** `http(s)://127.0.0.1:<port>` + path. */
  url(path?: string): string;
  port: number;
  deliveries: ReceivedDelivery[];
  /** Connections accepted, whether or not a request came. */
  connections: number;
  respond: Responder;
  /** Waits until `count` requests arrived (failing after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export const answerOk: Responder = () => ({ status: 204 });

/**
 * A real webhook receiver on loopback (HTTP, or HTTPS with the given key and certificate), answering as
 * `respond` says. Hanging requests are cut when the receiver closes.
 */
export async function startReceiver(respond: Responder = answerOk, tls?: { key: string; cert: string }, port = 0): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const handler = (request: http.IncomingMessage, response: http.ServerResponse) => {
    const receivedAt = performance.now();
    const receivedAtMs = Date.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    const reply = async () => {
      const delivery = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt, receivedAtMs };
      const index = receiver.deliveries.push(delivery) - 1;
      const answer = await receiver.respond(delivery, index);
      if (answer === 'hang') return;
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body);
    };
    // A responder that fails (a test's mistake) cuts the connection, a failed delivery, rather than leaving its rejection unhandled.
    request.on('end', () => {
      reply().catch(() => response.destroy());
    });
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  server.on('connection', (socket: Socket) => {
    receiver.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const actualPort = (server.address() as AddressInfo).port;
  const receiver: Receiver = {
    url: (path = '/hooks') => `${tls ? 'https' : 'http'}://127.0.0.1:${actualPort}${path}`,
    port: actualPort,
    deliveries: [],
    connections: 0,
    respond,
    async waitFor(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (receiver.deliveries.length < count) {
        if (Date.now() > deadline) throw new Error(`the receiver got ${receiver.deliveries.length} requests, expected ${count}`);
        await sleep(10);
      }
      return receiver.deliveries;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return receiver;
}

/** Polls `read` until `accept` holds (failing after `timeoutMs`), and returns the last value read. */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last value: ${JSON.stringify(value).slice(0, 500)}`);
    await sleep(50);
  }
}
