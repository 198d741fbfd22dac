import type { Server } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface DrainOptions {
  /** How long connections that are open but have not sent their request yet get to send it. */
  graceMs?: number;
  /** After this, connections still open are cut. */
  timeoutMs?: number;
}

/**
 * Stops accepting connections and lets every request already accepted finish with its normal answer.
 *
 * Node's `server.close()` also drops connections it considers idle, including ones accepted a moment ago
 * whose request is still on its way: their clients would see a reset. So idle connections are only closed
 * after a short grace period, and requests answered meanwhile carry `Connection: close`.
 */
export async function drainHttpServer(server: Server, { graceMs = 500, timeoutMs = 10_000 }: DrainOptions = {}): Promise<void> {
  const closeIdleConnections = server.closeIdleConnections.bind(server);
  server.closeIdleConnections = () => undefined;
  server.prependListener('request', (_request, response) => response.setHeader('Connection', 'close'));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  await sleep(graceMs);
  closeIdleConnections();
  const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearTimeout(deadline);
}
