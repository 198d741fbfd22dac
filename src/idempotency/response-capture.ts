import type { ServerResponse } from 'node:http';

/** What a response sent: its status, content type and body bytes. */
export interface CapturedResponse {
  statusCode: number;
  contentType: string | null;
  body: Buffer;
}

type End = ServerResponse['end'];
type Write = ServerResponse['write'];

const toBuffer = (chunk: unknown, encoding: unknown) =>
  Buffer.isBuffer(chunk)
    ? chunk
    : typeof chunk === 'string'
      ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
      : Buffer.from(chunk as Uint8Array);

/**
 * Records what this one response sends, and runs `beforeEnd` with it before the response actually ends: the
 * last bytes reach the client only once `beforeEnd` has settled (the idempotency record is stored before the
 * client can retry). Wraps `write` and `end` of this response object only, so no other request pays anything.
 */
export function captureResponse(response: ServerResponse, beforeEnd: (captured: CapturedResponse) => Promise<void>): void {
  const chunks: Buffer[] = [];
  // The methods as they are, unbound: put back as they were once the response ends, and called on this response.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be restored, and only called with .call/.apply(response)
  const write = response.write;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be restored, and only called with .call/.apply(response)
  const end = response.end;
  response.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    chunks.push(toBuffer(chunk, rest[0]));
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Write;
  response.end = function (this: ServerResponse, ...args: unknown[]) {
    const [chunk, encoding] = args;
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(toBuffer(chunk, encoding));
    response.write = write;
    response.end = end;
    const contentType = response.getHeader('content-type');
    const captured = {
      statusCode: response.statusCode,
      contentType: typeof contentType === 'string' ? contentType : null,
      body: Buffer.concat(chunks),
    };
    const finish = () => void (end as (...endArgs: unknown[]) => ServerResponse).apply(response, args);
    beforeEnd(captured).then(finish, finish); // beforeEnd reports its own failures; the client gets its answer regardless
    return response;
  } as End;
}
