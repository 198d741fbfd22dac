import * as http from 'node:http';
import type { ServerResponse } from 'node:http';
import { NestApplicationOptions, StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { mappedReply, SENDS_MAPPED_REPLIES } from './responds';

/**
 * A constructor for Node's HTTP server whose instances are made with `prototype` from the start.
 *
 * Express gives every request and response its app's prototypes (`app.request`, `app.response`) with
 * `Object.setPrototypeOf` as it enters the app. Changing the prototype of a live object is V8's slow path,
 * and these objects then survived young-generation collections they should have died in. When the server
 * makes them with the right prototype, Express's `setPrototypeOf` finds it already set and changes nothing
 * (expressjs/express#5998; the measurement: docs/experiments.md, "The request path").
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
 * Express, with its requests and responses made with their final prototypes (see constructorWithPrototype): the
 * one reach into the framework, kept because it earns far more than such a reach must (docs/experiments.md).
 * test/http-server.spec.ts fails if an upgrade of Express or Nest breaks it. Its reply sends what a route's mapper
 * makes of the handler's result (ResponseMapping).
 */
export class ApiExpressAdapter extends ExpressAdapter {
  readonly [SENDS_MAPPED_REPLIES] = true;

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

  /**
   * The body its route's mapper makes of a handler's result (ResponseMapping, mappedReply), sent as JSON by this
   * method (sendJson) when it is an object and nothing else was asked for, else by Nest's own.
   */
  override reply(response: unknown, body: unknown, statusCode?: number): unknown {
    const mapped = mappedReply(response as object, body);
    if (!isPlainJsonReply(response as ServerResponse, mapped)) return super.reply(response, mapped, statusCode);
    sendJson(response as ServerResponse, mapped, statusCode);
    return undefined;
  }
}

/**
 * Whether a reply is an object or an array to send as JSON to an unconditional request whose handler chose no
 * Content-Type: what almost every route answers. Express's `res.json` would send the same bytes and headers, after
 * a MIME lookup, two parses of the Content-Type and a check of the request's freshness: about 20 µs of the one-row
 * read's path (docs/benchmarks.md, "The read path (issue 41)"). A conditional request (Express answers it 304 when
 * it may) and a handler's own Content-Type go through Nest's reply, as before.
 */
function isPlainJsonReply(response: ServerResponse, body: unknown): body is object {
  if (typeof body !== 'object' || body === null) return false;
  if (body instanceof StreamableFile || body instanceof Error || Buffer.isBuffer(body)) return false; // Nest's reply has its ways
  const headers = response.req.headers;
  return response.getHeader('Content-Type') === undefined && !headers['if-none-match'] && !headers['if-modified-since'];
}

/** A JSON response as Express's `res.json` sends it (no ETag: the application disables them). */
function sendJson(response: ServerResponse, body: object, statusCode: number | undefined): void {
  const json = JSON.stringify(body);
  if (statusCode !== undefined) response.statusCode = statusCode;
  response.setHeader('Content-Type', 'application/json; charset=utf-8');
  response.setHeader('Content-Length', Buffer.byteLength(json));
  response.end(json); // Node sends no body to a HEAD request
}
