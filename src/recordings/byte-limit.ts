import { BadRequestException, PayloadTooLargeException } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { Transform, TransformCallback } from 'node:stream';

const MIB = 1024 * 1024;

/** A size as people read it: whole MiB when it is a whole number of them, bytes otherwise (never a rounded limit). */
export const sizeInWords = (bytes: number) =>
  bytes % MIB === 0 ? `${bytes / MIB} MiB` : `${bytes.toLocaleString('en-US')} ${bytes === 1 ? 'byte' : 'bytes'}`;

export const tooLarge = (maxBytes: number) => new PayloadTooLargeException(`A recording may be at most ${sizeInWords(maxBytes)}`);

/**
 * Passes bytes through while counting them: fails with a 413 as soon as more than `maxBytes` went by
 * (whatever Content-Length claimed), and with a 400 if the body ends empty.
 */
export class ByteLimit extends Transform {
  bytes = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return callback(tooLarge(this.maxBytes));
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    callback(this.bytes === 0 ? new BadRequestException('The recording is empty') : null);
  }
}

/**
 * The request body through a ByteLimit. The request is piped, not put in a pipeline, so that when the limit
 * trips the request is merely left unread (the answer then goes out with `Connection: close`) instead of
 * destroyed along with the socket the answer needs. A client that goes away mid-body fails the stream with a 400.
 */
export function limitedBody(request: IncomingMessage, maxBytes: number): ByteLimit {
  // Whoever reads the limiter sees its error; until one does (storage may still be setting up), this listener
  // keeps an early error (an empty body, say) from being an unhandled 'error' event.
  const limiter = new ByteLimit(maxBytes).on('error', () => undefined);
  request.once('error', (error) => limiter.destroy(error));
  request.once('close', () => {
    if (!request.complete) limiter.destroy(new BadRequestException('The upload was interrupted'));
  });
  return request.pipe(limiter);
}
