import * as http from 'node:http';
import { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';

/** A JSON object or array a route returned (not a stream, a buffer or a value Express must format). */
function isPlainJson(body: unknown): body is object {
  if (body === null || typeof body !== 'object') return false;
  const prototype: unknown = Object.getPrototypeOf(body);
  return prototype === Object.prototype || prototype === Array.prototype;
}

/**
 * A constructor for Node's HTTP server whose instances are made with `prototype` from the start.
 *
 * Express gives every request and response its app's prototypes (`app.request`, `app.response`) with
 * `Object.setPrototypeOf` as it enters the app. Changing the prototype of a live object is V8's slow path,
 * and these objects then survived young-generation collections they should have died in: at 4 connections
 * the service promoted ~11 KB per request to the old generation, and each young collection took ~3 ms
 * instead of ~1. When the server makes them with the right prototype, Express's `setPrototypeOf` finds it
 * already set and changes nothing: CPU per `GET /calls/{id}` 0.49 → 0.33 ms (BENCHMARKS.md, "Performance",
 * change 14; expressjs/express#5998).
 *
 * Node's IncomingMessage and ServerResponse are plain constructor functions (not classes), so they can
 * initialise an object made by this one; each takes at most two arguments.
 */
function constructorWithPrototype<T>(nodeConstructor: T, prototype: object): T {
  const initialise = nodeConstructor as unknown as (this: object, first: unknown, second: unknown) => void;
  function WithPrototype(this: object, first: unknown, second: unknown): void {
    initialise.call(this, first, second);
  }
  WithPrototype.prototype = prototype;
  return WithPrototype as unknown as T;
}

/**
 * Express, with its requests and responses made with their final prototypes (see constructorWithPrototype)
 * and a route's plain JSON result sent directly:
 * - a plain JSON result is encoded into one Buffer and written with its length, as `res.json` would write it
 *   but without the header bookkeeping of `res.send` (ETags are off, and a JSON response is never a
 *   conditional one here). A Buffer rather than the string: a large JSON string is a rope that measuring its
 *   byte length flattened (a second copy on the heap) and the socket then copied again; the Buffer lives off
 *   the heap, one copy (CPU per request, A/B: `GET /calls` −7 %, `GET /agents` −5 %). Everything else
 *   (streams, errors, strings) goes through Express.
 */
export class ApiExpressAdapter extends ExpressAdapter {
  /**
   * Nest's own, except for the request and response constructors given to the server. The options this
   * service does not use are refused rather than silently ignored: TLS ends in front of it, and shutdown is
   * drainHttpServer's (src/shutdown.ts).
   */
  override initHttpServer(options: NestApplicationOptions = {}): void {
    const unsupported = (['httpsOptions', 'return503OnClosing', 'forceCloseConnections'] as const).filter((option) => options[option]);
    if (unsupported.length) throw new Error(`ApiExpressAdapter does not support ${unsupported.join(', ')}`);
    const app = this.getInstance<Express>();
    this.httpServer = http.createServer(
      {
        IncomingMessage: constructorWithPrototype(http.IncomingMessage, app.request),
        ServerResponse: constructorWithPrototype(http.ServerResponse, app.response),
      },
      app,
    );
  }

  override reply(response: http.ServerResponse, body: unknown, statusCode?: number): unknown {
    if (!isPlainJson(body) || response.hasHeader('Content-Type')) return super.reply(response, body, statusCode);
    const json = JSON.stringify(body);
    if (statusCode !== undefined) response.statusCode = statusCode;
    response.setHeader('Content-Type', 'application/json; charset=utf-8');
    const encoded = Buffer.from(json);
    response.setHeader('Content-Length', encoded.length);
    return response.end(encoded);
  }
}
