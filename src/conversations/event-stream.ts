import type { Response } from 'express';

/**
 * A Server-Sent Events response: `event: <name>` and one `data:` line of JSON per event (JSON keeps the text on
 * one line). Writes after the client went away are dropped: the work behind the stream goes on regardless.
 */
export class EventStream {
  constructor(private readonly response: Response) {
    response.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // Proxies such as nginx would otherwise buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    response.flushHeaders();
  }

  get open(): boolean {
    return !this.response.destroyed && !this.response.writableEnded;
  }

  send(event: string, data: unknown): void {
    if (this.open) this.response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    if (this.open) this.response.end();
  }
}
