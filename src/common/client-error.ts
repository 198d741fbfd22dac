import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { errorResponse } from './error-response.dto';

const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, message: 'Request headers are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'The request was not received in time' },
};
const MALFORMED = { status: 400, message: 'Malformed HTTP request' };

/**
 * Requests Node rejects before any route sees them (oversized headers, malformed HTTP) get an answer in the
 * API's error shape too, instead of Node's bare status line: 431 for headers over Node's limit
 * (--max-http-header-size, 16 KiB by default), 408 for headers not received within the server's headersTimeout,
 * 400 otherwise.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (error.code === 'ECONNRESET' && !socket.bytesWritten)) {
      socket.destroy();
      return;
    }
    const { status, message } = CLIENT_ERRORS[error.code ?? ''] ?? MALFORMED;
    const body = JSON.stringify(errorResponse(status, message));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
