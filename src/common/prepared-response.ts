import type { ServerResponse } from 'node:http';

/**
 * A complete answer, thrown by a guard that answers in the handler's place (the idempotency guard's replay of a
 * stored response): the exception filter sends it as it is, rather than as an error. An Error only so that what is
 * thrown is one (the filter looks for this class first).
 */
export class PreparedResponse extends Error {
  constructor(
    readonly statusCode: number,
    readonly headers: Record<string, string>,
    readonly body: Buffer,
  ) {
    super(`A prepared response (HTTP ${statusCode})`);
    this.name = 'PreparedResponse';
  }

  send(response: ServerResponse): void {
    response.statusCode = this.statusCode;
    for (const [name, value] of Object.entries(this.headers)) response.setHeader(name, value);
    response.setHeader('Content-Length', this.body.length);
    response.end(this.body);
  }
}
