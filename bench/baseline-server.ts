/**
 * The raw baseline: the fastest straightforward hand-written server for the benchmark's scenarios, with
 * node:http and pg only. It answers with the same SQL (same tables, indexes, filters and columns), the same
 * API-key check (SHA-256 of the key, one indexed lookup per request) and the same JSON as the service,
 * so that the difference between the two is what the framework stack costs.
 *
 *   DATABASE_URL=postgres://… PORT=3100 node -r ./scripts/register.js bench/baseline-server.ts
 *
 * Routes: GET /calls (limit, search, status, days, callStatus, agentId), GET /calls/{id}, GET /agents, GET /voices,
 * POST /agents, PATCH /agents/{id}; and, for measuring the key check alone, GET /bench/noop (no key, 204)
 * and GET /bench/auth (key check only, 204). Validation covers what the scenarios send; it is not the
 * contract's full rule set (that is the service's job).
 */
import * as http from 'node:http';
import { Pool } from 'pg';
import { mayUseVoice, REPLY_LANGUAGES, VOICE_IDS, VOICES } from '../src/agents/voices';
import { hashApiKey, isWellFormedApiKey } from '../src/auth/api-key-token';
import { creditsUsed } from '../src/calls/credits';
import { AGENT_COLUMNS, AUTH_SQL, GET_CALL_SQL, INSERT_AGENT_SQL, LIST_AGENTS_SQL, listCallsQuery, QueryParamError } from './queries';

interface Caller {
  id: number;
  name: string;
  isPlatform: boolean;
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

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DB_POOL_SIZE ?? 10),
  statement_timeout: 10_000,
  application_name: 'voice-agent-baseline',
});
const CREDITS_PER_MINUTE = Number(process.env.CREDITS_PER_MINUTE ?? 1);

// ---------------------------------------------------------------- JSON (as the service writes it)

type Row = Record<string, any>;

function callListItem(row: Row) {
  return {
    id: row.id,
    name: row.name,
    phone: row.phone,
    email: row.email,
    status: row.status,
    callStatus: row.call_status,
    sentiment: row.sentiment,
    channel: row.channel,
    callType: row.call_type,
    website: row.website,
    agent: row.agent_name,
    agentId: row.agent_id,
    callDate: row.call_date.toISOString(),
    durationSeconds: row.duration_seconds,
    replyLanguage: row.reply_language,
    hasRecording: row.recording_key !== null,
    feedback: row.feedback ?? null,
    extractedData: row.extracted_data,
  };
}

function callDetail(row: Row) {
  return {
    ...callListItem(row),
    creditsUsed: creditsUsed(row.duration_seconds, CREDITS_PER_MINUTE),
    transcript: (row.transcript as { speaker: string; text: string }[]).map(({ speaker, text }) => ({ speaker, text })),
  };
}

function agent(row: Row) {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    model: row.model,
    voice: row.voice,
    language: row.language,
    systemPrompt: row.system_prompt,
    knowledgeBaseIds: row.knowledge_base_ids,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

// ---------------------------------------------------------------- validation (what the scenarios need)

const badRequest = (message: string) => new HttpError(400, 'Bad Request', message);
const notFound = (message: string) => new HttpError(404, 'Not Found', message);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const AGENT_FIELDS: Record<string, { column: string; check: (value: unknown) => string | null }> = {
  name: { column: 'name', check: (v) => (typeof v === 'string' && v.trim().length >= 1 && v.trim().length <= 200 ? null : 'name must be 1–200 characters') },
  description: { column: 'description', check: (v) => (typeof v === 'string' && v.length <= 2000 ? null : 'description must be at most 2000 characters') },
  model: { column: 'model', check: (v) => (typeof v === 'string' && v.length >= 1 && v.length <= 100 ? null : 'model must be 1–100 characters') },
  voice: { column: 'voice', check: (v) => (VOICE_IDS.includes(v as string) ? null : 'voice must be a voice of the catalog') },
  language: { column: 'language', check: (v) => ((REPLY_LANGUAGES as readonly unknown[]).includes(v) ? null : 'language must be a supported language') },
  systemPrompt: { column: 'system_prompt', check: (v) => (typeof v === 'string' && v.length <= 50_000 ? null : 'systemPrompt must be at most 50000 characters') },
};
const AGENT_DEFAULTS = { name: 'Unnamed agent', description: '', model: 'gpt-4.1', voice: 'shubh', language: 'hi-IN', systemPrompt: '' };

/** The given agent fields, checked (unknown fields refused), names trimmed. */
function agentFields(caller: Caller, body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest('The body must be a JSON object');
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    const rule = AGENT_FIELDS[key];
    if (!rule) throw badRequest(`property ${key} should not exist`);
    const problem = rule.check(value);
    if (problem) throw badRequest(problem);
    fields[key] = key === 'name' ? (value as string).trim() : value;
  }
  if (fields.voice !== undefined && !mayUseVoice(fields.voice as string, caller)) {
    throw new HttpError(403, 'Forbidden', `Voice ${fields.voice} is reserved for the platform account`);
  }
  return fields;
}

// ---------------------------------------------------------------- routes

async function authenticate(request: http.IncomingMessage): Promise<Caller> {
  const key = request.headers['x-api-key'];
  if (typeof key !== 'string' || key === '') throw new HttpError(401, 'Unauthorized', 'Missing X-Api-Key header');
  const { rows } = await pool.query<Caller>(AUTH_SQL, [hashApiKey(key)]);
  if (!rows[0] || !isWellFormedApiKey(key)) throw new HttpError(401, 'Unauthorized', 'Invalid API key');
  return rows[0];
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

function listCalls(accountId: number, query: URLSearchParams) {
  try {
    return listCallsQuery(accountId, query);
  } catch (error) {
    throw error instanceof QueryParamError ? badRequest(error.message) : error;
  }
}

function agentId(raw: string): number {
  const id = /^\d{1,10}$/.test(raw) ? Number(raw) : 0;
  if (id < 1 || id > 2_147_483_647) throw notFound(`Agent ${raw} not found`);
  return id;
}

async function route(request: http.IncomingMessage, url: URL): Promise<[number, unknown]> {
  const method = request.method ?? 'GET';
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts[0] === 'bench' && method === 'GET') {
    if (parts[1] === 'noop') return [204, undefined];
    if (parts[1] === 'auth') return (await authenticate(request), [204, undefined]);
  }
  const caller = await authenticate(request);
  if (parts[0] === 'voices' && parts.length === 1 && method === 'GET') {
    return [200, VOICES.map((voice) => ({ id: voice.id, name: voice.name, tier: voice.tier, available: mayUseVoice(voice.id, caller) }))];
  }
  if (parts[0] === 'calls' && method === 'GET') {
    if (parts.length === 1) {
      const { text, values } = listCalls(caller.id, url.searchParams);
      const { rows } = await pool.query(text, values);
      return [200, rows.map(callListItem)];
    }
    if (parts.length === 2) {
      const id = parts[1];
      const { rows } = UUID.test(id) ? await pool.query(GET_CALL_SQL, [caller.id, id.toLowerCase()]) : { rows: [] };
      if (!rows[0]) throw notFound(`Call ${id} not found`);
      return [200, callDetail(rows[0])];
    }
  }
  if (parts[0] === 'agents') {
    if (parts.length === 1 && method === 'GET') {
      const { rows } = await pool.query(LIST_AGENTS_SQL, [caller.id]);
      return [200, rows.map(agent)];
    }
    if (parts.length === 1 && method === 'POST') {
      const fields = { ...AGENT_DEFAULTS, ...agentFields(caller, await readJson(request)) };
      const { rows } = await pool.query(INSERT_AGENT_SQL, [
        caller.id,
        fields.name,
        fields.description,
        fields.model,
        fields.voice,
        fields.language,
        fields.systemPrompt,
      ]);
      return [201, agent(rows[0])];
    }
    if (parts.length === 2 && method === 'PATCH') {
      const id = agentId(parts[1]);
      const fields = agentFields(caller, await readJson(request));
      const values: unknown[] = [id, caller.id];
      const sets = Object.entries(fields).map(([key, value]) => `${AGENT_FIELDS[key].column} = $${values.push(value)}`);
      const { rows } = await pool.query(
        `UPDATE agents SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 AND account_id = $2 RETURNING ${AGENT_COLUMNS}`,
        values,
      );
      if (!rows[0]) throw notFound(`Agent ${id} not found`);
      return [200, agent(rows[0])];
    }
  }
  throw notFound(`Cannot ${method} ${url.pathname}`);
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  if (body === undefined) {
    response.writeHead(status).end();
    return;
  }
  const json = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }).end(json);
}

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  route(request, url).then(
    ([status, body]) => send(response, status, body),
    (error: unknown) => {
      if (error instanceof HttpError) return send(response, error.statusCode, { statusCode: error.statusCode, error: error.error, message: error.message });
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
