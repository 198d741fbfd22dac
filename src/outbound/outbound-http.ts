import * as http from 'node:http';
import * as https from 'node:https';
import { LookupFunction, isIP } from 'node:net';
import { promises as dns } from 'node:dns';
import { Readable, pipeline } from 'node:stream';
import * as zlib from 'node:zlib';
import { AddressPolicy, refusalReason } from './address-policy';

/**
 * HTTP requests to addresses a customer chose (knowledge-base URLs, webhooks), safe against server-side
 * request forgery:
 * - the host name is resolved once per connection, every address it resolves to is checked against the
 *   AddressPolicy (one refused address refuses the request), and the connection is pinned to the checked
 *   address (Node's `lookup` hook answers with it), so a second DNS answer cannot swap in another address;
 *   TLS SNI, certificate checks and the Host header still use the name;
 * - literal addresses in any spelling (`http://2130706433/`, `http://0x7f.1/`, `http://[::ffff:127.0.0.1]/`)
 *   are normalised by the WHATWG URL parser first, then checked the same way;
 * - each redirect is a new request, checked again from its URL (scheme included);
 * - one deadline covers everything (resolving, connecting, redirects, the body), and the body is capped
 *   (after decompression: gzip and br are accepted, so a small compressed body cannot expand past the cap).
 *
 * Errors are OutboundError, whose messages are safe to show to the customer who named the URL (they say what
 * was refused and why, never the addresses a name resolved to).
 */

/** How names become addresses; injectable so that tests can make a name resolve to anything. */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface OutboundRequestOptions {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent to the URL's origin; not forwarded by a redirect to another origin. */
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  policy: AddressPolicy;
  /** Refuse http: URLs (redirects included). */
  httpsOnly?: boolean;
  /** The whole exchange, redirects and body included. */
  timeoutMs: number;
  /** Largest response body kept, in bytes after decompression. */
  maxBodyBytes: number;
  /** Past maxBodyBytes: `fail` (an OutboundError `too-large`, the default) or `truncate` (keep the first bytes). */
  overflow?: 'fail' | 'truncate';
  /** Redirects followed (301, 302, 303, 307, 308); 0 (the default) returns the 3xx response as it is. */
  maxRedirects?: number;
  /** Default: the system's resolver (dns.lookup, as every other client on the machine). */
  resolver?: Resolver;
  /** Aborts the request from outside (a shutdown). */
  signal?: AbortSignal;
  /** Keep-alive connections, reused per pinned address (PinnedAgents). Default: a new connection per request. */
  agents?: PinnedAgents;
}

/**
 * Keep-alive connections for a caller that sends many requests to a few targets (webhook deliveries), where
 * a TCP (and TLS) handshake per request would cost more than the request. One agent per checked address, so
 * that a connection is only ever reused for the address it was opened to: a name that resolves elsewhere
 * now gets a new connection, pinned to the new (checked) address. The least recently used agents beyond
 * `maxAgents` are closed; idle connections close after `idleMs` (below the usual 5 s of servers' own
 * keep-alive, so that a connection is not reused just as the server closes it).
 */
export class PinnedAgents {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly options: { maxAgents?: number; idleMs?: number; maxSocketsPerAddress?: number } = {}) {}

  agentFor(protocol: string, address: string): http.Agent {
    const key = `${protocol}//${address}`;
    const known = this.agents.get(key);
    if (known) {
      // Most recently used last: the Map's order is the eviction order.
      this.agents.delete(key);
      this.agents.set(key, known);
      return known;
    }
    const { maxAgents = 256, idleMs = 4_000, maxSocketsPerAddress = 64 } = this.options;
    const settings = {
      keepAlive: true,
      timeout: idleMs,
      maxSockets: maxSocketsPerAddress,
      maxFreeSockets: maxSocketsPerAddress,
      scheduling: 'lifo' as const,
    };
    const agent = protocol === 'https:' ? new https.Agent(settings) : new http.Agent(settings);
    this.agents.set(key, agent);
    if (this.agents.size > maxAgents) {
      const [oldestKey, oldest] = this.agents.entries().next().value!;
      this.agents.delete(oldestKey);
      oldest.destroy();
    }
    return agent;
  }

  /** Closes every connection. */
  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

export interface OutboundResponse {
  /** The URL that answered, after redirects. */
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Whether the body was cut at maxBodyBytes (overflow `truncate`). */
  truncated: boolean;
}

export type OutboundErrorCode =
  'invalid-url' | 'forbidden-address' | 'dns' | 'connection' | 'timeout' | 'too-large' | 'too-many-redirects' | 'bad-response';

export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundError';
  }
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const USER_AGENT = 'voice-agent-api';

const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

/** Sends one request (following redirects as allowed) and reads the response body, under one deadline. */
export async function outboundRequest(target: string, options: OutboundRequestOptions): Promise<OutboundResponse> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  try {
    return await follow(target, options, signal);
  } catch (error) {
    if (deadline.aborted) throw new OutboundError('timeout', `no complete answer within ${options.timeoutMs / 1000} s`);
    throw error;
  }
}

async function follow(target: string, options: OutboundRequestOptions, signal: AbortSignal): Promise<OutboundResponse> {
  const maxRedirects = options.maxRedirects ?? 0;
  const origin = checkedUrl(target, options).origin;
  let url = target;
  let method = options.method ?? 'GET';
  let body = options.body;
  for (let redirects = 0; ; redirects++) {
    const parsed = checkedUrl(url, options);
    const address = await checkedAddress(parsed.hostname, options, signal);
    const headers = parsed.origin === origin ? options.headers : undefined;
    const response = await send(parsed, address, { method, headers, body }, signal, options.agents);
    const location = response.headers.location;
    if (maxRedirects === 0 || !REDIRECT_STATUSES.has(response.statusCode ?? 0) || !location) {
      const { body: content, truncated } = await readBody(response, method, options);
      return { url: parsed.href, status: response.statusCode ?? 0, headers: response.headers, body: content, truncated };
    }
    response.destroy();
    if (redirects >= maxRedirects) throw new OutboundError('too-many-redirects', `more than ${maxRedirects} redirects`);
    url = redirectTarget(location, parsed);
    // 303, and 301/302 after a POST, turn into a GET without a body (as browsers do); 307 and 308 repeat the request.
    if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
  }
}

function checkedUrl(target: string, options: OutboundRequestOptions): URL {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new OutboundError('invalid-url', 'not a valid absolute URL');
  }
  const allowed = options.httpsOnly ? ['https:'] : ['http:', 'https:'];
  if (!allowed.includes(url.protocol))
    throw new OutboundError('invalid-url', `only ${allowed.join(' and ')} URLs are allowed, not ${url.protocol}`);
  if (url.username || url.password) throw new OutboundError('invalid-url', 'URLs with credentials are not allowed');
  return url;
}

function redirectTarget(location: string, from: URL): string {
  try {
    return new URL(location, from).href;
  } catch {
    throw new OutboundError('bad-response', 'a redirect to an invalid URL');
  }
}

/** The address to connect to: the literal one, or the first the name resolves to; each checked. */
async function checkedAddress(
  hostname: string,
  options: OutboundRequestOptions,
  signal: AbortSignal,
): Promise<{ address: string; family: number }> {
  const literal = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(literal)) {
    const reason = refusalReason(literal, options.policy);
    if (reason) throw new OutboundError('forbidden-address', `${hostname} is ${reason}`);
    return { address: literal, family: isIP(literal) };
  }
  let addresses: { address: string; family: number }[];
  try {
    addresses = await abortable((options.resolver ?? systemResolver)(hostname), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new OutboundError('dns', `${hostname} could not be resolved`);
  }
  if (addresses.length === 0) throw new OutboundError('dns', `${hostname} could not be resolved`);
  for (const { address } of addresses) {
    const reason = refusalReason(address, options.policy);
    if (reason) throw new OutboundError('forbidden-address', `${hostname} resolves to ${reason}`);
  }
  return addresses[0];
}

/** Connects to exactly `address` (the name is not resolved again), sending the name in Host and TLS SNI. */
function send(
  url: URL,
  address: { address: string; family: number },
  request: { method: string; headers?: Record<string, string>; body?: string | Uint8Array },
  signal: AbortSignal,
  agents: PinnedAgents | undefined,
): Promise<http.IncomingMessage> {
  const pinned: LookupFunction = (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) (callback as (error: null, addresses: { address: string; family: number }[]) => void)(null, [address]);
    else callback(null, address.address, address.family);
  };
  const isHttps = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve, reject) => {
    const req = (isHttps ? https : http).request({
      host,
      port: url.port || (isHttps ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: { 'user-agent': USER_AGENT, 'accept-encoding': 'gzip, br', ...request.headers },
      lookup: pinned,
      agent: agents?.agentFor(url.protocol, address.address) ?? false,
      signal,
      ...(isHttps && !isIP(host) ? { servername: host } : {}),
    });
    req.once('response', resolve);
    req.once('error', (error) =>
      reject(signal.aborted ? error : new OutboundError('connection', `${url.host} could not be reached (${connectionProblem(error)})`)),
    );
    req.end(request.body);
  });
}

/** A short, address-free description of a connection failure. */
function connectionProblem(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'connection reset';
  if (typeof code === 'string' && /CERT|SSL|TLS/i.test(code)) return 'TLS certificate not accepted';
  if (code === 'HPE_HEADER_OVERFLOW' || (typeof code === 'string' && code.startsWith('HPE_'))) return 'not a valid HTTP response';
  return 'network error';
}

/** The body, decompressed and capped. */
async function readBody(
  response: http.IncomingMessage,
  method: string,
  options: OutboundRequestOptions,
): Promise<{ body: Buffer; truncated: boolean }> {
  const { maxBodyBytes, overflow = 'fail' } = options;
  if (method === 'HEAD') {
    response.resume();
    return { body: Buffer.alloc(0), truncated: false };
  }
  const declared = Number(response.headers['content-length']);
  if (overflow === 'fail' && !response.headers['content-encoding'] && declared > maxBodyBytes) {
    response.destroy();
    throw tooLarge(maxBodyBytes);
  }
  const stream = decoded(response);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (size + chunk.length > maxBodyBytes) {
        if (overflow === 'fail') throw tooLarge(maxBodyBytes);
        chunks.push(chunk.subarray(0, maxBodyBytes - size));
        return { body: Buffer.concat(chunks), truncated: true };
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } catch (error) {
    if (error instanceof OutboundError) throw error;
    throw new OutboundError('bad-response', 'the response ended abnormally');
  } finally {
    response.destroy();
    if (stream !== response) stream.destroy();
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function decoded(response: http.IncomingMessage): Readable {
  const encoding = String(response.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (encoding === 'identity' || encoding === '') return response;
  // pipeline: an error on either side (the connection cut, corrupt data) ends both with it.
  const ignore = () => undefined;
  if (encoding === 'gzip' || encoding === 'x-gzip') return pipeline(response, zlib.createGunzip(), ignore);
  if (encoding === 'br') return pipeline(response, zlib.createBrotliDecompress(), ignore);
  response.destroy();
  throw new OutboundError('bad-response', `unsupported content encoding ${encoding.slice(0, 40)}`);
}

const tooLarge = (maxBodyBytes: number) => new OutboundError('too-large', `the response is larger than ${formatBytes(maxBodyBytes)}`);

const formatBytes = (bytes: number) =>
  bytes % 1_048_576 === 0 ? `${bytes / 1_048_576} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Why the signal fired: its reason (the deadline's TimeoutError, or the caller's), an Error whatever was given. */
function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException('This operation was aborted', 'AbortError');
}
