import type { Request, Response } from 'express';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** The OpenAPI content of a response that is a recording (its errors stay application/json). */
export const MP3 = { 'audio/mpeg': { schema: { type: 'string' as const, format: 'binary' } } };

/**
 * Streams a recording (or a range of it) as the response body, with backpressure. If the client goes away,
 * pipeline destroys the storage stream, which closes its file or connection: nothing stays open.
 * A HEAD request gets the headers only, and the stream is released at once.
 */
export async function sendRecording(request: Request, response: Response, stream: Readable, length: number): Promise<void> {
  response.setHeader('Content-Type', 'audio/mpeg');
  response.setHeader('Content-Length', String(length));
  response.setHeader('Cache-Control', 'private, no-store');
  response.setHeader('X-Content-Type-Options', 'nosniff');
  if (request.method === 'HEAD') {
    stream.destroy();
    response.end();
    return;
  }
  try {
    await pipeline(stream, response);
  } catch {
    // The client went away, or storage failed mid-body: the status line is long gone, so the only honest
    // signal left is a cut connection (pipeline has already destroyed both ends).
  }
}
