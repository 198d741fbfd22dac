import { BadRequestException, PayloadTooLargeException } from '@nestjs/common';
import { Transform, TransformCallback } from 'node:stream';

export const mebibytes = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 100) / 100} MiB`;

export const tooLarge = (maxBytes: number) => new PayloadTooLargeException(`A recording may be at most ${mebibytes(maxBytes)}`);

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
