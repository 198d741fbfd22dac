import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** How long a test context's request or close may take before it is reported (a test's own timeout is 30 s). */
const SLOW_MS = 5_000;

const report = (line: string) => process.stderr.write(`[slow] ${line}\n`);

/**
 * Reports, on stderr, each request a test context's server has not answered SLOW_MS after it came (its method, its
 * path without the query, whether its body had arrived whole), and each close of the server (supertest closes it
 * after every request it started it for) that waits longer than that (with the connections still open): what a
 * test waiting past its timeout was waiting on, which its log otherwise does not say (the contexts log nothing).
 * Tests that hold a request or a connection open on purpose are reported too.
 */
export function reportSlowRequests(server: Server): void {
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const timer = setTimeout(() => {
      const path = (request.url ?? '').split('?')[0];
      report(`${request.method} ${path} unanswered after ${SLOW_MS} ms (body ${request.complete ? 'whole' : 'not whole'})`);
    }, SLOW_MS).unref();
    // Sent, or its connection closed (a response Express writes for an upgrade request has no `close`).
    response.once('finish', () => clearTimeout(timer));
    response.once('close', () => clearTimeout(timer));
  });
  const close = server.close.bind(server);
  server.close = (callback?: (error?: Error) => void) => {
    const timer = setTimeout(() => {
      server.getConnections((_error, open) => report(`a close waits after ${SLOW_MS} ms, ${open} connections open`));
    }, SLOW_MS).unref();
    return close((error?: Error) => {
      clearTimeout(timer);
      callback?.(error);
    });
  };
}
