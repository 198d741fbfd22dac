import type { Response } from 'express';

/** One event: its name and one `data:` line of JSON (JSON keeps the text on one line). */
function eventText(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * A Server-Sent Events response: `event: <name>` and one `data:` line of JSON per event (JSON keeps the text on
 * one line). Writes after the client went away are dropped: the work behind the stream goes on regardless.
 * Events sent in one turn of the event loop (a provider's chunks often arrive together) go out in one write:
 * the response is corked at the first and uncorked at the end of the turn, so nothing waits longer than that.
 */
export class EventStream {
  private corked = false;

  constructor(private readonly response: Response) {
    response.status(200).set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache, no-transform',
      // Proxies such as nginx would otherwise buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    // The headers go out with the first event (one write fewer than flushing them now).
  }

  get open(): boolean {
    return !this.response.destroyed && !this.response.writableEnded;
  }

  send(event: string, data: unknown): void {
    if (!this.open) return;
    if (!this.corked) {
      this.corked = true;
      this.response.cork();
      process.nextTick(() => this.uncork());
    }
    this.response.write(eventText(event, data));
  }

  /**
   * Sends the last event and ends the response, in one write after the events of this turn: those are written
   * first (Node 24's `end()` on a corked response wrote the body's last chunk before them, and the client read
   * events after the end of the response).
   */
  end(event: string, data: unknown): void {
    if (!this.open) return;
    this.uncork();
    this.response.end(eventText(event, data));
  }

  private uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.response.uncork();
  }
}
