/**
 * The webhooks benchmark's receiver, in its own process (so that its work is not counted against the load
 * generator's): answers every POST with 204 at once and records when each request's headers arrived
 * (performance.timeOrigin + performance.now(), comparable across processes) and which call it was about.
 * Driven over IPC by bench/webhooks.ts: `reset`, `report`.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

let arrivals: number[] = [];
let callIds: (string | null)[] = [];

const server = http.createServer((request, response) => {
  const arrivedAt = performance.timeOrigin + performance.now();
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    response.writeHead(204).end();
    const body = Buffer.concat(chunks).toString('utf8');
    // The call's id is the first "id" inside "data" (every benchmark event is a call event).
    const match = /"data":\{"id":"([0-9a-f-]{36})"/.exec(body);
    arrivals.push(arrivedAt);
    callIds.push(match ? match[1] : null);
  });
});
server.keepAliveTimeout = 60_000;

server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));

process.on('message', (message: { command: 'reset' | 'report'; withCalls?: boolean }) => {
  if (message.command === 'reset') {
    arrivals = [];
    callIds = [];
    process.send!({ reset: true });
  } else {
    process.send!({
      count: arrivals.length,
      first: arrivals.length ? arrivals.reduce((a, b) => Math.min(a, b)) : null,
      last: arrivals.length ? arrivals.reduce((a, b) => Math.max(a, b)) : null,
      calls: message.withCalls ? callIds.map((id, index) => [id, arrivals[index]]) : undefined,
    });
  }
});
process.on('disconnect', () => process.exit(0));
