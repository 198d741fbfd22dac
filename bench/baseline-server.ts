/**
 * The baseline: the best straightforward hand-written server for the benchmark's scenarios, node:http and pg
 * only, no framework. It does everything the service does to avoid work, so that the difference between the
 * two is what the framework stack costs, not a cache (issue 18):
 * - the same SQL and the same JSON: it calls the service's own repositories (plain SQL through a pg pool) and
 *   response mappers, so its answers are byte-identical and every query change reaches both;
 * - the same pool settings (src/database/data-source-options.ts);
 * - the same verified-key cache: a key checked in the last 10 s is answered from memory (the service also
 *   listens for revocations; that costs it nothing per request, so the baseline leaves it out).
 * - the same duties per request that the contract and docs/api-guide.md ask of every response, done by the service's own
 *   functions so that both servers' responses are byte-identical, headers included (the runner checks it): the
 *   request id and the request log line (pino-http on the same asynchronous pino logger, `requestLogger`), the
 *   security headers (helmet's, recorded once, `recordHelmetHeaders`), the per-account rate limit counted in the
 *   same in-memory storage with its `RateLimit` headers, and the key's scope for the method.
 * What it does not do is the framework: no router, no guards, no pipes, no class-validator (it checks what the
 * scenarios send), no idempotency rules (the benchmark sends no Idempotency-Key). `BASELINE_DUTIES=off` leaves the
 * duties out too, for the figures of a bare server (docs/experiments.md compares the two).
 *
 *   DATABASE_URL=postgres://… PORT=3100 node -r ./scripts/register.js bench/baseline-server.ts
 *
 * Routes: GET /calls (limit, search, status, days, callStatus, agentId, before; the next page in Link), GET /calls/{id}, GET /agents, GET /voices,
 * POST /agents, PATCH /agents/{id}; and, for measuring the key check alone, GET /bench/noop (no key, 204)
 * and GET /bench/auth (key check only, 204).
 */
import * as http from 'node:http';
import { Pool } from 'pg';
import { AgentFields, AgentsRepository } from '../src/agents/agents.repository';
import { toAgentResponse } from '../src/agents/dto/agent-response.dto';
import { mayUseVoice, REPLY_LANGUAGES, VOICE_IDS, VOICES } from '../src/agents/voices';
import { hashApiKey, isWellFormedApiKey } from '../src/auth/api-key-token';
import { CallFilters, CallsRepository } from '../src/calls/calls.repository';
import { creditsUsed } from '../src/calls/credits';
import { nextPageUrl } from '../src/calls/calls.controller';
import { toCallListItemResponse, toCallResponse } from '../src/calls/dto/call-response.dto';
import type { ListCallsQuery } from '../src/calls/dto/list-calls-query.dto';
import { decodeListCursor, encodeListCursor, ListCursor } from '../src/calls/list-cursor';
import { scopeForMethod } from '../src/auth/scopes';
import { codePointLength } from '../src/common/code-points';
import { createLogger, requestLogger } from '../src/common/logger';
import { recordHelmetHeaders } from '../src/common/security';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';
import { Database } from '../src/database/database';
import { MemoryThrottlerStorage } from '../src/rate-limit/memory-throttler-storage';
import { rateLimitState, retryAfterSeconds, setRateLimitHeaders, tooManyRequestsMessage } from '../src/rate-limit/rate-limit';
import { AUTH_SQL } from './queries';

interface Caller {
  id: number;
  name: string;
  isPlatform: boolean;
  scopes: string[];
}

class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

const config = loadConfig();
const options = dataSourceOptions(process.env.DATABASE_URL!, config);
const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: config.dbPoolSize,
  application_name: 'voice-agent-baseline',
  ...(options.extra as object),
});
const database = new Database(pool);
const agents = new AgentsRepository(database);
const calls = new CallsRepository(database);

// ---------------------------------------------------------------- the key check, with the service's cache

const KEY_TTL_MS = 10_000;
const verified = new Map<string, { caller: Caller; expiresAt: number }>();

async function authenticate(request: http.IncomingMessage): Promise<Caller> {
  const key = request.headers['x-api-key'];
  if (typeof key !== 'string' || key === '') throw new HttpError(401, 'Unauthorized', 'Missing X-Api-Key header');
  if (!isWellFormedApiKey(key)) throw new HttpError(401, 'Unauthorized', 'Invalid API key');
  const hash = hashApiKey(key);
  const cached = verified.get(hash);
  if (cached && cached.expiresAt > Date.now()) return cached.caller;
  const { rows } = await pool.query<Caller>(AUTH_SQL, [hash]);
  if (!rows[0]) throw new HttpError(401, 'Unauthorized', 'Invalid API key');
  verified.set(hash, { caller: rows[0], expiresAt: Date.now() + KEY_TTL_MS });
  return rows[0];
}

// ---------------------------------------------------------------- the duties of every response (see the header)

const duties = process.env.BASELINE_DUTIES !== 'off';
const logRequest = requestLogger(createLogger(config));
const securityHeaders = recordHelmetHeaders();
const rateLimits = new MemoryThrottlerStorage();

/** Before routing: the request id and its log line (written when the response is done), the security headers. */
function startResponse(request: http.IncomingMessage, response: http.ServerResponse): void {
  if (!duties) return;
  logRequest(request, response);
  for (const [name, value] of securityHeaders.set) response.setHeader(name, value);
  for (const name of securityHeaders.removed) response.removeHeader(name);
}

/** After the key check: the account's request counted, its rate-limit headers, the scope of the method. */
async function admit(caller: Caller, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  if (!duties) return;
  const ttl = config.rateLimitWindowSeconds * 1000;
  const record = await rateLimits.increment(`account:account:${caller.id}`, ttl, config.rateLimit, ttl, 'account');
  setRateLimitHeaders(response, rateLimitState(config.rateLimit, config.rateLimitWindowSeconds, record));
  if (record.isBlocked) {
    const retryAfter = retryAfterSeconds(record.timeToBlockExpire);
    response.setHeader('Retry-After', retryAfter);
    throw new HttpError(429, 'Too Many Requests', tooManyRequestsMessage(retryAfter));
  }
  if (!caller.scopes.includes(scopeForMethod(request.method ?? 'GET')))
    throw new HttpError(403, 'Forbidden', 'This API key lacks the scope');
}

// ---------------------------------------------------------------- validation (what the scenarios send)

const badRequest = (message: string) => new HttpError(400, 'Bad Request', message);
const notFound = (message: string) => new HttpError(404, 'Not Found', message);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const text = (min: number, max: number) => (v: unknown) => typeof v === 'string' && codePointLength(v) >= min && codePointLength(v) <= max;
const AGENT_FIELDS: Record<string, (value: unknown) => boolean> = {
  name: (v) => typeof v === 'string' && text(1, 200)(v.trim()),
  description: text(0, 2000),
  model: text(1, 100),
  voice: (v) => VOICE_IDS.includes(v as string),
  language: (v) => (REPLY_LANGUAGES as readonly unknown[]).includes(v),
  systemPrompt: text(0, 50_000),
};
const AGENT_DEFAULTS: AgentFields = {
  name: 'Unnamed agent',
  description: '',
  model: 'gpt-4.1',
  voice: 'shubh',
  language: 'hi-IN',
  systemPrompt: '',
};

/** The given agent fields, checked (unknown fields refused), names trimmed. */
function agentFields(caller: Caller, body: unknown): Partial<AgentFields> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The body must be a JSON object');
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const valid = AGENT_FIELDS[key];
    if (!valid) throw badRequest(`property ${key} should not exist`);
    if (!valid(value)) throw badRequest(`${key} is not valid`);
    fields[key] = key === 'name' ? (value as string).trim() : value;
  }
  if (typeof fields.voice === 'string' && !mayUseVoice(fields.voice, caller)) {
    throw new HttpError(403, 'Forbidden', `Voice ${fields.voice} is reserved for the platform account`);
  }
  return fields;
}

function intParam(query: URLSearchParams, name: string, fallback: number | undefined, min: number, max: number): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(value) || value < min || value > max) throw badRequest(`${name} must be an integer between ${min} and ${max}`);
  return value;
}

function textParam(query: URLSearchParams, name: string, max: number): string | undefined {
  const value = (query.get(name) ?? '').trim();
  if (codePointLength(value) > max) throw badRequest(`${name} must be at most ${max} characters`);
  return value || undefined;
}

function callFilters(query: URLSearchParams): { filters: CallFilters; limit: number; before?: ListCursor } {
  const days = intParam(query, 'days', 0, 0, 3650);
  const cursor = query.get('before');
  const before = cursor ? decodeListCursor(cursor) : undefined;
  if (cursor && !before) throw badRequest('before must be a cursor from a Link header of GET /calls');
  return {
    before,
    filters: {
      search: textParam(query, 'search', 200),
      status: textParam(query, 'status', 100),
      callStatus: textParam(query, 'callStatus', 100),
      agentId: intParam(query, 'agentId', undefined, 1, 2_147_483_647),
      days: days || undefined,
    },
    limit: intParam(query, 'limit', 200, 1, 1000)!,
  };
}

function readJson(request: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
      return reject(new HttpError(415, 'Unsupported Media Type', 'Content-Type must be application/json'));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > 2 * 1024 * 1024) reject(new HttpError(413, 'Payload Too Large', 'The body is larger than 2 MiB'));
      else chunks.push(chunk);
    });
    request.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(badRequest('The body is not valid JSON'));
      }
    });
    request.on('error', reject);
  });
}

function agentId(raw: string): number {
  const id = /^\d{1,10}$/.test(raw) ? Number(raw) : 0;
  if (id < 1 || id > 2_147_483_647) throw notFound(`Agent ${raw} not found`);
  return id;
}

// ---------------------------------------------------------------- routes

async function route(request: http.IncomingMessage, response: http.ServerResponse, url: URL): Promise<[number, unknown]> {
  const method = request.method ?? 'GET';
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts[0] === 'bench' && method === 'GET') {
    if (parts[1] === 'noop') return [204, undefined];
    if (parts[1] === 'auth') return (await authenticate(request), [204, undefined]);
  }
  const caller = await authenticate(request);
  await admit(caller, request, response);
  if (parts[0] === 'voices' && parts.length === 1 && method === 'GET') {
    return [200, VOICES.map((voice) => ({ id: voice.id, name: voice.name, tier: voice.tier, available: mayUseVoice(voice.id, caller) }))];
  }
  if (parts[0] === 'calls' && method === 'GET') {
    if (parts.length === 1) {
      const { filters, limit, before } = callFilters(url.searchParams);
      const page = await calls.list(caller.id, filters, limit, before);
      const last = page.at(-1);
      if (last && page.length === limit) {
        const query = { ...filters, limit } as ListCallsQuery;
        response.setHeader('Link', `<${nextPageUrl(config.publicBaseUrl, query, encodeListCursor(last))}>; rel="next"`);
      }
      return [200, page.map(toCallListItemResponse)];
    }
    if (parts.length === 2) {
      const call = UUID.test(parts[1]) ? await calls.get(caller.id, parts[1].toLowerCase()) : undefined;
      if (!call) throw notFound(`Call ${parts[1]} not found`);
      return [200, toCallResponse({ call, creditsUsed: creditsUsed(call.durationSeconds, config.creditsPerMinute) })];
    }
  }
  if (parts[0] === 'agents') {
    if (parts.length === 1 && method === 'GET') return [200, (await agents.list(caller.id)).map(toAgentResponse)];
    if (parts.length === 1 && method === 'POST') {
      const fields = { ...AGENT_DEFAULTS, ...agentFields(caller, await readJson(request)) };
      return [201, toAgentResponse(await agents.insert(caller.id, fields))];
    }
    if (parts.length === 2 && method === 'PATCH') {
      const id = agentId(parts[1]);
      const agent = await agents.update(caller.id, id, agentFields(caller, await readJson(request)));
      if (!agent) throw notFound(`Agent ${id} not found`);
      return [200, toAgentResponse(agent)];
    }
  }
  throw notFound(`Cannot ${method} ${url.pathname}`);
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  const json = Buffer.from(JSON.stringify(body));
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': json.length }).end(json);
}

const server = http.createServer((request, response) => {
  startResponse(request, response);
  const url = new URL(request.url ?? '/', 'http://localhost');
  route(request, response, url).then(
    ([status, body]) => send(response, status, body),
    (error: unknown) => {
      if (error instanceof HttpError)
        return send(response, error.statusCode, { statusCode: error.statusCode, error: error.error, message: error.message });
      console.error(error);
      send(response, 500, { statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' });
    },
  );
});
server.keepAliveTimeout = 65_000;

const port = Number(process.env.PORT ?? 3100);
server.listen(port, '127.0.0.1', () => process.stdout.write(`Baseline listening on 127.0.0.1:${port}\n`));
const stop = () => server.close(() => void pool.end().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
