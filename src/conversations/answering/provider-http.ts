import { OnApplicationShutdown } from '@nestjs/common';
import * as http from 'node:http';
import * as https from 'node:https';
import { Readable } from 'node:stream';

/** Longest a kept-alive connection to the provider stays idle. */
const IDLE_MS = 4_000;

/** Statuses whose responses have no body (the Fetch standard's null body statuses). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * The `fetch` that the `openai` client is given for the provider: node:http(s) with kept-alive connections,
 * answering a WHATWG `Response` whose body streams the provider's bytes as they arrive.
 *
 * Why not Node's own `fetch` (undici): it follows the caller's AbortSignal through a FinalizationRegistry that
 * holds the signal, and through a WeakRef the request's own controller, until a full garbage collection
 * (nodejs/undici#5822, #4984). Young-generation collections keep what those reach, so every reply's request,
 * response and stream objects were copied into the old generation, and the longer young collections set the
 * tail of a message's time (docs/experiments.md, "Conversations").
 *
 * What the client needs of it, and no more: string or byte bodies (`Content-Length` set), the signal (an abort
 * before the answer rejects with the AbortError, after it errors the body), a connection failure as a
 * `TypeError` as Node's fetch gives, no `Accept-Encoding` (so no compressed answers), and redirects not
 * followed (a 3xx is the provider's error: LLM_BASE_URL must be the API's own address).
 */
export class ProviderHttp implements OnApplicationShutdown {
  private readonly agents: { 'http:': http.Agent; 'https:': https.Agent };

  /** `tls`: extra trust for a provider whose certificate a private authority signed (as NODE_EXTRA_CA_CERTS). */
  constructor(tls: Pick<https.AgentOptions, 'ca'> = {}) {
    // An idle connection is closed after 4 s, or a second before the server's `Keep-Alive: timeout` hint when
    // that is sooner (Node's agent reads the hint only when it has a timeout of its own), so that one is not
    // reused just as the provider closes it. The timeout is for idle connections only: a reply that pauses
    // longer between tokens goes on.
    const options = { keepAlive: true, timeout: IDLE_MS, scheduling: 'lifo' as const };
    this.agents = { 'http:': new http.Agent(options), 'https:': new https.Agent({ ...options, ...tls }) };
  }

  readonly fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    const protocol = url.protocol;
    if (protocol !== 'http:' && protocol !== 'https:') throw new TypeError(`fetch failed: ${protocol} is not http: or https:`);
    const body = requestBody(init.body);
    const headers: http.OutgoingHttpHeaders = {};
    // The client passes a Headers already; anything else fetch accepts is read the same way.
    (init.headers instanceof Headers ? init.headers : new Headers(init.headers)).forEach((value, name) => (headers[name] = value));
    if (body !== undefined) headers['content-length'] = body.byteLength;
    const method = init.method ?? 'GET';
    const signal = init.signal ?? undefined;
    if (signal?.aborted) throw abortError(signal);
    const request = (protocol === 'https:' ? https.request : http.request)(url, { method, headers, agent: this.agents[protocol] });
    return new Promise<Response>((resolve, reject) => {
      let incoming: http.IncomingMessage | undefined;
      // Before the answer, the request fails with the AbortError; after it, the body does (as fetch's would).
      const onAbort = () => (incoming ?? request).destroy(abortError(signal!));
      signal?.addEventListener('abort', onAbort, { once: true });
      request.on('close', () => signal?.removeEventListener('abort', onAbort));
      request.on('error', (error: Error) => reject(error.name === 'AbortError' ? error : new TypeError('fetch failed', { cause: error })));
      request.once('response', (answer) => {
        incoming = answer;
        try {
          resolve(toResponse(answer, url, method));
        } catch (error) {
          answer.destroy();
          reject(new TypeError('fetch failed', { cause: error }));
        }
      });
      request.end(body);
    });
  };

  onApplicationShutdown(): void {
    this.agents['http:'].destroy();
    this.agents['https:'].destroy();
  }
}

/** The signal's reason when it is an error (an AbortError by default), as fetch rejects with it. */
function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}

function requestBody(body: RequestInit['body']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  // The chat and analysis requests send JSON text; streams and forms (the client's file uploads) are not used.
  throw new TypeError('The provider client sends only text or bytes');
}

function toResponse(incoming: http.IncomingMessage, url: URL, method: string): Response {
  const status = incoming.statusCode ?? 0;
  const headers = new Headers();
  for (let index = 0; index < incoming.rawHeaders.length; index += 2)
    headers.append(incoming.rawHeaders[index], incoming.rawHeaders[index + 1]);
  const hasBody = method !== 'HEAD' && !NULL_BODY_STATUSES.has(status);
  if (!hasBody) incoming.resume();
  const response = new Response(hasBody ? (Readable.toWeb(incoming) as ReadableStream<Uint8Array>) : null, {
    status,
    statusText: incoming.statusMessage ?? '',
    headers,
  });
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}
