import * as http from 'node:http';
import { Writable } from 'node:stream';
import { INestApplication } from '@nestjs/common';
import { createLogger } from '../src/common/logger';
import { listenOnLoopback, TestAccount, TestContext } from './helpers';

export { eventually } from './helpers';

/** One Server-Sent Event as a browser's EventSource parser delivers it. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/**
 * Parses a text/event-stream body the way the HTML standard's parser does: lines end in CRLF, LF or CR; a blank
 * line dispatches the event; `field: value` (one leading space dropped), several data lines joined by LF;
 * comment lines (`:`) ignored; an event without a name is `message`; an unfinished last event is dropped.
 */
export function parseEventStream(body: string): ServerSentEvent[] {
  const events: ServerSentEvent[] = [];
  let event = '';
  let data: string[] = [];
  const lines = body.split(/\r\n|\r|\n/);
  // The last element follows the last line break: an unfinished line, never dispatched.
  for (const line of lines.slice(0, -1)) {
    if (line === '') {
      if (data.length) events.push({ event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return events;
}

/** A logger whose JSON lines are kept, to check what was (not) logged. */
export function capturedLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ logLevel: 'info' }, sink), lines };
}

export interface Started {
  conversationId: string;
  token: string;
  greeting: string;
  expiresAt: string;
}

/** Starts a conversation with the agent through the API (201 checked). */
export async function startConversation(context: TestContext, owner: TestAccount, agentId: number, body: object = {}): Promise<Started> {
  return (await context.as(owner).post(`/agents/${agentId}/conversations`).send(body).expect(201)).body;
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The app listening on a loopback port (for clients that must see the stream as it comes, or go away mid-way). */
export async function listen(app: INestApplication): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(app.getHttpAdapter().getInstance());
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * POSTs a message asking for a stream, and hands each received part of the body to `onData` as it arrives;
 * `onData` may return 'disconnect' to go away at once. Resolves with the status and the whole body received.
 */
export function streamMessage(
  baseUrl: string,
  conversationId: string,
  token: string,
  text: string,
  onData: (received: string) => void | 'disconnect' = () => undefined,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; disconnected: boolean }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${baseUrl}/conversations/${conversationId}/messages`, {
      method: 'POST',
      headers: { ...bearer(token), 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => {
        body += part;
        if (onData(body) === 'disconnect') {
          request.destroy();
          resolve({ status: response.statusCode!, headers: response.headers, body, disconnected: true });
        }
      });
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body, disconnected: false }));
      response.on('error', () => undefined);
    });
    request.end(JSON.stringify({ text }));
  });
}
