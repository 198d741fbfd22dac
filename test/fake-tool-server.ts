import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { once } from 'node:events';

/**
 * A stand-in for a customer's tool endpoint on loopback (HTTP): every request it got is kept (headers and raw body,
 * as a Standard Webhooks verifier needs them), and it answers as the test says: JSON or text, after a delay or never,
 * a status, a body of any size streamed without a declared length, a redirect, or the connection closed.
 */

export type ToolAnswer =
  /** `hold`: answered once it settles (after `delayMs` otherwise); `answered` is told when the answer has gone out. */
  | { kind: 'json'; body: unknown; status?: number; delayMs?: number; hold?: Promise<unknown>; answered?: (completed: boolean) => void }
  | { kind: 'text'; body: string; status?: number }
  /** 200 with these bytes, as `application/octet-stream`. */
  | { kind: 'bytes'; body: Buffer }
  /** Headers never sent, the connection held open until the server closes. */
  | { kind: 'hang' }
  /** 200, then `bytes` bytes in 64 KiB chunks (chunked encoding), each written when the client has read the last. */
  | { kind: 'huge'; bytes: number }
  | { kind: 'redirect'; status?: number; location: string }
  /** The connection destroyed once the request has arrived, without an answer. */
  | { kind: 'close' };

export interface ReceivedToolRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface ToolServer {
  url(path?: string): string;
  requests: ReceivedToolRequest[];
  answer: (request: ReceivedToolRequest) => ToolAnswer;
  /** For each `huge` answer, in order: the bytes written before the client went away (or all of them). */
  hugeWritten: Promise<number>[];
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Writes `bytes` bytes as the client reads them; resolves with how many were written when it stopped. */
async function writeHuge(response: http.ServerResponse, bytes: number): Promise<number> {
  response.writeHead(200, { 'Content-Type': 'text/plain' });
  let written = 0;
  while (written < bytes && !response.destroyed) {
    const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, bytes - written));
    written += chunk.length;
    if (!response.write(chunk)) await Promise.race([once(response, 'drain'), once(response, 'close')]);
  }
  if (!response.destroyed) response.end();
  return written;
}

export async function startToolServer(answer: ToolServer['answer'] = () => ({ kind: 'json', body: { ok: true } })): Promise<ToolServer> {
  const sockets = new Set<Socket>();
  const server = http.createServer((incoming, response) => {
    const parts: Buffer[] = [];
    incoming.on('data', (part: Buffer) => parts.push(part));
    incoming.on('end', () => {
      const request = {
        method: incoming.method!,
        path: incoming.url!,
        headers: incoming.headers,
        body: Buffer.concat(parts).toString('utf8'),
      };
      tools.requests.push(request);
      const plan = tools.answer(request);
      switch (plan.kind) {
        case 'json': {
          const send = () => {
            if (response.destroyed) return plan.answered?.(false);
            response
              .writeHead(plan.status ?? 200, { 'Content-Type': 'application/json' })
              .end(JSON.stringify(plan.body), () => plan.answered?.(true));
          };
          if (plan.hold) void plan.hold.then(send, send);
          else if (plan.delayMs) setTimeout(send, plan.delayMs);
          else send();
          return;
        }
        case 'text':
          response.writeHead(plan.status ?? 200, { 'Content-Type': 'text/plain; charset=utf-8' }).end(plan.body);
          return;
        case 'bytes':
          response.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(plan.body);
          return;
        case 'hang':
          return;
        case 'huge':
          tools.hugeWritten.push(writeHuge(response, plan.bytes));
          return;
        case 'redirect':
          response.writeHead(plan.status ?? 302, { Location: plan.location }).end();
          return;
        case 'close':
          incoming.socket.destroy();
          return;
      }
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const tools: ToolServer = {
    url: (path = '/tools/book-table') => `http://127.0.0.1:${port}${path}`,
    requests: [],
    answer,
    hugeWritten: [],
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return tools;
}

/**
 * The body of `POST /tools` for a webhook tool on this server that the spoken tests call: `opening_hours`, one
 * required `day`, saying `speakWhileRunning` while it runs.
 */
export const openingHoursTool = (server: ToolServer, speakWhileRunning: string) => ({
  type: 'webhook',
  name: 'opening_hours',
  description: 'Tells when the shop opens on a day.',
  url: server.url('/hours'),
  parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
  speakWhileRunning,
});
