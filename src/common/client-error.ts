import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { errorResponse } from './error-response.dto';

/**
 * Requests Node rejects before any route sees them (oversized headers, malformed HTTP) get an answer in the
 * API's error shape too, instead of Node's bare status line: 431 for headers over Node's limit
 * (--max-http-header-size, 16 KiB by default), 400 otherwise.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && !socket.bytesWritten)) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = JSON.stringify(
      errorResponse(status, status === 431 ? 'Request headers are too large' : 'Malformed HTTP request'),
    );
    socket.end(
      `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
