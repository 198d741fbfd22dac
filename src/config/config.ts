import * as net from 'node:net';
import * as path from 'node:path';
import { RATE_DECIMALS } from '../calls/credits';
import { StartupError } from '../common/startup-error';

/**
 * Typed configuration, read once from the environment and validated.
 * A bad value throws a ConfigError naming the variable, which stops start-up.
 */
export interface AppConfig {
  port: number;
  /** PostgreSQL connection string; undefined means "run the embedded PostgreSQL". */
  databaseUrl: string | undefined;
  dataDir: string;
  /** Port of the embedded PostgreSQL; undefined: 54329, or a free one when another program has that one. */
  embeddedPgPort: number | undefined;
  dbPoolSize: number;
  dbStatementTimeoutMs: number;
  dbConnectionTimeoutMs: number;
  /** How long a migration waits for a table lock before it gives up (and is retried). */
  dbMigrationLockTimeoutMs: number;
  publicBaseUrl: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  creditsPerMinute: number;
  recordingUrlTtlSeconds: number;
  /** Browser origins allowed to call the management API (CORS); empty: none. */
  corsOrigins: string[];
  /** Requests per window per account on the management API; 0 turns the limit off. */
  rateLimit: number;
  /** Requests without a valid API key per window per client IP; 0 turns the limit off. */
  unauthenticatedRateLimit: number;
  rateLimitWindowSeconds: number;
  /** Shared rate-limit counters for several instances; unset: in memory. */
  redisUrl: string | undefined;
  /** Server secret of the stored idempotent answers' encryption (src/idempotency); unset: generated once and kept under DATA_DIR. */
  idempotencySecret: string | undefined;
  /** Express `trust proxy`: how client IPs are read behind reverse proxies (false, a hop count, or their addresses). */
  trustProxy: false | number | string[];
  /** Requests per window to the public widget routes, per site key and client IP. */
  widgetRateLimit: number;
  widgetRateLimitWindowSeconds: number;
  /** Where recordings live (see StorageConfig below). */
  storage: StorageConfig;
  /** PostgreSQL schema of the job queue (pg-boss's tables). */
  jobQueueSchema: string;
  /** How often pg-boss's maintenance runs: it retries jobs whose instance died mid-job (after their expiry). */
  jobMaintenanceIntervalSeconds: number;
  /** Who answers in conversations (see LlmConfig). */
  llm: LlmConfig;
  /** Passages of the agent's knowledge bases given with each reply, at most. */
  ragPassages: number;
  /** A conversation without a message for this long ends by itself. */
  conversationIdleSeconds: number;
  /** How many conversations and replies at once (see ConversationLimitsConfig). */
  conversationLimits: ConversationLimitsConfig;
  /** The longest one export (GET /calls/export) may stream; past it the transfer is cut. */
  exportMaxSeconds: number;
  /** URL sources may be fetched from loopback, private and link-local addresses (development only; src/outbound). */
  fetchAllowPrivateAddresses: boolean;
  /** Whether this instance works the job queues (false: it only queues jobs, for other instances to do). */
  jobWorkers: boolean;
  /** Webhook deliveries (see WebhooksConfig below). */
  webhooks: WebhooksConfig;
  /** How long a request's body may take to arrive, from its headers, before it is cut (408); uploads aside. */
  httpRequestTimeoutMs: number;
  /** The same for a recording upload, which streams up to 200 MiB; at least httpRequestTimeoutMs. */
  httpUploadTimeoutMs: number;
  /** Open connections at most; a connection beyond is closed at once (slow clients cannot hold the process). */
  httpMaxConnections: number;
  /** Who speaks and who listens on the voice socket (see VoiceConfig). */
  voice: VoiceConfig;
  /** Files uploaded to knowledge bases (see KnowledgeFilesConfig). */
  knowledgeFiles: KnowledgeFilesConfig;
  /** Phone numbers and phone calls through the carrier (see TelephonyConfig). */
  telephony: TelephonyConfig;
}

/** An OpenAI-compatible Chat Completions provider; without `baseUrl`, the built-in answerer replies. */
export interface LlmConfig {
  /** e.g. https://api.openai.com/v1 or http://localhost:11434/v1 (Ollama); unset: no provider. */
  baseUrl: string | undefined;
  apiKey: string | undefined;
  /** The longest one reply (or one analysis) may take, first byte to last. */
  timeoutMs: number;
  maxTokens: number;
}

export class ConfigError extends StartupError {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A decimal number written with at most `decimals` decimal places (no exponent), between min and max. */
function readDecimal(env: Env, name: string, fallback: number, min: number, max: number, decimals: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = new RegExp(`^\\d+(\\.\\d{1,${decimals}})?$`).test(raw.trim()) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    throw new ConfigError(name, `must be a number between ${min} and ${max} with at most ${decimals} decimals, got "${raw}"`);
  }
  return value;
}

function readEnum<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}

function readUrl(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be a valid URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw.replace(/\/+$/, '');
}

/** A URL that paths are appended to (`PUBLIC_BASE_URL` + `/recordings/…`): no query, fragment or credentials. */
function readBaseUrl(env: Env, name: string): string | undefined {
  const value = readUrl(env, name, ['http:', 'https:']);
  if (value === undefined) return undefined;
  const url = new URL(value);
  if (url.search || url.hash || url.username || url.password) {
    throw new ConfigError(name, 'must be a base URL without a query, fragment or credentials, such as https://api.example.com');
  }
  return value;
}

function readOrigins(env: Env, name: string): string[] {
  const raw = env[name]?.trim();
  if (!raw) return [];
  return raw.split(',').map((entry) => {
    const origin = entry.trim();
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new ConfigError(name, `must be a comma-separated list of origins such as https://app.example.com, got "${origin}"`);
    }
    if (!['http:', 'https:'].includes(url.protocol) || url.origin !== origin.replace(/\/$/, '')) {
      throw new ConfigError(name, `must list origins only (scheme, host, optional port), got "${origin}"`);
    }
    return url.origin;
  });
}

/** Express's names for ranges of addresses (proxy-addr). */
const TRUST_PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrSubnet(entry: string): boolean {
  if (TRUST_PROXY_NAMES.includes(entry)) return true;
  const [address, prefix, ...rest] = entry.split('/');
  const version = net.isIP(address);
  if (version === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
}

/**
 * How client IPs are read behind reverse proxies: unset or `false`, the number of proxies in front (Express
 * then takes the address that many hops from the right of X-Forwarded-For), or the proxies' addresses and
 * subnets. Never `true`: Express would take the left-most X-Forwarded-For address, which the client writes,
 * so anyone could claim any IP (and escape the per-IP rate limits).
 */
function readTrustProxy(env: Env, name: string): false | number | string[] {
  const raw = env[name]?.trim();
  if (!raw || raw === 'false') return false;
  if (raw === 'true') {
    throw new ConfigError(
      name,
      'must not be true: that trusts the X-Forwarded-For address the client itself writes, so any client could fake its IP. ' +
        'Set the number of proxies in front of the service (a hop count: 1 behind one load balancer), or their addresses or subnets',
    );
  }
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((entry) => entry.trim());
  const invalid = entries.find((entry) => !isAddressOrSubnet(entry));
  if (invalid !== undefined) {
    throw new ConfigError(
      name,
      `must be a hop count or a comma-separated list of proxy addresses or subnets (10.0.0.0/8, loopback), got "${invalid}"`,
    );
  }
  return entries;
}

export function loadConfig(env: Env = process.env): AppConfig {
  const port = readInt(env, 'PORT', 3000, 0, 65535);
  return {
    port,
    databaseUrl: readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dataDir: path.resolve(env.DATA_DIR?.trim() || '.data'),
    embeddedPgPort: env.EMBEDDED_PG_PORT?.trim() ? readInt(env, 'EMBEDDED_PG_PORT', 0, 1024, 65535) : undefined,
    dbPoolSize: readInt(env, 'DB_POOL_SIZE', 10, 1, 200),
    dbStatementTimeoutMs: readInt(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 100, 600_000),
    dbConnectionTimeoutMs: readInt(env, 'DB_CONNECTION_TIMEOUT_MS', 3_000, 100, 60_000),
    dbMigrationLockTimeoutMs: readInt(env, 'DB_MIGRATION_LOCK_TIMEOUT_MS', 5_000, 100, 600_000),
    publicBaseUrl: readBaseUrl(env, 'PUBLIC_BASE_URL') ?? `http://localhost:${port}`,
    logLevel: readEnum(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    creditsPerMinute: readDecimal(env, 'CREDITS_PER_MINUTE', 1, 0, 1_000_000, RATE_DECIMALS),
    recordingUrlTtlSeconds: readInt(env, 'RECORDING_URL_TTL_SECONDS', 300, 1, 7 * 24 * 3600),
    corsOrigins: readOrigins(env, 'CORS_ORIGINS'),
    rateLimit: readInt(env, 'RATE_LIMIT', 600, 0, 100_000_000),
    rateLimitWindowSeconds: readInt(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    unauthenticatedRateLimit: readInt(env, 'UNAUTHENTICATED_RATE_LIMIT', 60, 0, 100_000_000),
    redisUrl: readUrl(env, 'REDIS_URL', ['redis:', 'rediss:']),
    trustProxy: readTrustProxy(env, 'TRUST_PROXY'),
    widgetRateLimit: readInt(env, 'WIDGET_RATE_LIMIT', 60, 1, 1_000_000),
    widgetRateLimitWindowSeconds: readInt(env, 'WIDGET_RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    storage: readStorageConfig(env),
    jobQueueSchema:
      readMatching(env, 'JOB_QUEUE_SCHEMA', /^[a-z_][a-z0-9_]{0,62}$/, 'must be a lowercase PostgreSQL identifier (letters, digits, _)') ??
      'pgboss',
    jobMaintenanceIntervalSeconds: readInt(env, 'JOB_MAINTENANCE_INTERVAL_SECONDS', 30, 1, 3600),
    idempotencySecret: readMatching(env, 'IDEMPOTENCY_SECRET', /^\S{32,512}$/, 'must be 32-512 characters without spaces'),
    llm: {
      baseUrl: readUrl(env, 'LLM_BASE_URL', ['http:', 'https:']),
      apiKey: readMatching(env, 'LLM_API_KEY', /^\S{1,4096}$/, 'must be 1-4096 characters without spaces'),
      timeoutMs: readInt(env, 'LLM_TIMEOUT_MS', 30_000, 100, 600_000),
      maxTokens: readInt(env, 'LLM_MAX_TOKENS', 512, 1, 1_000_000),
    },
    ragPassages: readInt(env, 'RAG_PASSAGES', 4, 0, 20),
    conversationIdleSeconds: readInt(env, 'CONVERSATION_IDLE_SECONDS', 300, 10, 7 * 24 * 3600),
    conversationLimits: readConversationLimits(env),
    exportMaxSeconds: readInt(env, 'EXPORT_MAX_SECONDS', 600, 1, 86_400),
    fetchAllowPrivateAddresses: readBoolean(env, 'FETCH_ALLOW_PRIVATE_ADDRESSES', false),
    jobWorkers: readBoolean(env, 'JOB_WORKERS', true),
    webhooks: readWebhooksConfig(env),
    ...readHttpLimits(env),
    voice: readVoiceConfig(env),
    knowledgeFiles: readKnowledgeFilesConfig(env),
    telephony: readTelephonyConfig(env),
  };
}

/** The bounds on receiving requests (src/common/http-timeouts.ts): an upload's is never shorter than any request's. */
function readHttpLimits(env: Env): Pick<AppConfig, 'httpRequestTimeoutMs' | 'httpUploadTimeoutMs' | 'httpMaxConnections'> {
  const httpRequestTimeoutMs = readInt(env, 'HTTP_REQUEST_TIMEOUT_MS', 60_000, 1_000, 3_600_000);
  const httpUploadTimeoutMs = readInt(env, 'HTTP_UPLOAD_TIMEOUT_MS', 3_600_000, 1_000, 86_400_000);
  if (httpUploadTimeoutMs < httpRequestTimeoutMs) {
    throw new ConfigError(
      'HTTP_UPLOAD_TIMEOUT_MS',
      `must be at least HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs}), got ${httpUploadTimeoutMs}`,
    );
  }
  return { httpRequestTimeoutMs, httpUploadTimeoutMs, httpMaxConnections: readInt(env, 'HTTP_MAX_CONNECTIONS', 4096, 1, 1_000_000) };
}

// ---- Conversations' caps (owned by src/conversations) ----

/**
 * What one site, one account and one client address may hold at once: a public site key is enough to start
 * conversations, and each reply is a request to the operator's LLM provider, so neither is left unbounded.
 */
export interface ConversationLimitsConfig {
  /** Active conversations of one widget site, and of one account (API conversations included), counted in PostgreSQL. */
  activePerSite: number;
  activePerAccount: number;
  /** Replies being produced at once by one instance, per site, per account, and per client address (widget conversations). */
  repliesPerSite: number;
  repliesPerAccount: number;
  repliesPerAddress: number;
  /** Widget conversations one client address may start per WIDGET_RATE_LIMIT_WINDOW_SECONDS, whatever the site. */
  startsPerAddress: number;
}

function readConversationLimits(env: Env): ConversationLimitsConfig {
  return {
    activePerSite: readInt(env, 'CONVERSATION_MAX_ACTIVE_PER_SITE', 100, 1, 1_000_000),
    activePerAccount: readInt(env, 'CONVERSATION_MAX_ACTIVE_PER_ACCOUNT', 200, 1, 1_000_000),
    repliesPerSite: readInt(env, 'CONVERSATION_MAX_REPLIES_PER_SITE', 20, 1, 100_000),
    repliesPerAccount: readInt(env, 'CONVERSATION_MAX_REPLIES_PER_ACCOUNT', 40, 1, 100_000),
    repliesPerAddress: readInt(env, 'CONVERSATION_MAX_REPLIES_PER_ADDRESS', 4, 1, 100_000),
    startsPerAddress: readInt(env, 'CONVERSATION_MAX_STARTS_PER_ADDRESS', 20, 1, 1_000_000),
  };
}

// ---- Webhooks (owned by src/webhooks) ----

export interface WebhooksConfig {
  /** Allow http: URLs and loopback, private, link-local targets (development, tests); cloud metadata stays refused. */
  allowPrivateTargets: boolean;
  /** One delivery attempt, from resolving the name to the end of the answer. */
  timeoutMs: number;
  /** Delays before each retry after a failed attempt; the attempt after the last one is the last. */
  retrySeconds: number[];
  /** Events (with their deliveries) older than this many days are deleted once none of their deliveries is pending. */
  retentionDays: number;
}

export const DEFAULT_WEBHOOK_RETRY_SECONDS = [10, 60, 300, 1800, 7200, 21600, 43200];
const MAX_WEBHOOK_RETRIES = 20;
const MAX_WEBHOOK_RETRY_DELAY_SECONDS = 7 * 24 * 3600;

function readSecondsList(env: Env, name: string, fallback: number[]): number[] {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const entries = raw.split(',').map((entry) => entry.trim());
  const rule = `must be a comma-separated list of at most ${MAX_WEBHOOK_RETRIES} whole numbers of seconds (0-${MAX_WEBHOOK_RETRY_DELAY_SECONDS}), got "${raw}"`;
  if (entries.length > MAX_WEBHOOK_RETRIES || entries.some((entry) => !/^\d{1,7}$/.test(entry))) throw new ConfigError(name, rule);
  const delays = entries.map(Number);
  if (delays.some((delay) => delay > MAX_WEBHOOK_RETRY_DELAY_SECONDS)) throw new ConfigError(name, rule);
  return delays;
}

function readWebhooksConfig(env: Env): WebhooksConfig {
  return {
    allowPrivateTargets: readBoolean(env, 'WEBHOOK_ALLOW_PRIVATE_TARGETS', false),
    timeoutMs: readInt(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
    retrySeconds: readSecondsList(env, 'WEBHOOK_RETRY_SECONDS', DEFAULT_WEBHOOK_RETRY_SECONDS),
    retentionDays: readInt(env, 'WEBHOOK_RETENTION_DAYS', 30, 1, 3650),
  };
}

// ---- Recordings storage (owned by src/recordings) ----

/** The contract's largest recording. */
export const MAX_RECORDING_BYTES = 200 * 1024 * 1024;

export interface S3StorageConfig {
  bucket: string;
  region: string;
  /** Unset: AWS S3 itself. Set for MinIO, R2 and other S3-compatible stores. */
  endpoint: string | undefined;
  /** The store's address as browsers reach it, for presigned playback URLs; unset: `endpoint`. */
  publicEndpoint: string | undefined;
  /** Both unset: the SDK's default credential chain (environment, profile, instance role). */
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  forcePathStyle: boolean;
}

export interface StorageConfig {
  driver: 'local' | 's3';
  /** Set when STORAGE_DRIVER=s3. */
  s3: S3StorageConfig | undefined;
  /** HMAC secret of the local driver's signed URLs; unset: generated once and kept under DATA_DIR. */
  signingSecret: string | undefined;
  /** Largest accepted upload, at most the contract's 200 MiB. */
  maxRecordingBytes: number;
}

function readBoolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes'].includes(raw)) return true;
  if (['false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(name, `must be true or false, got "${env[name]}"`);
}

function readMatching(env: Env, name: string, pattern: RegExp, rule: string): string | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (!pattern.test(raw)) throw new ConfigError(name, rule);
  return raw;
}

const required = <T>(value: T | undefined, name: string, why: string): T => {
  if (value === undefined) throw new ConfigError(name, `is required ${why}`);
  return value;
};

function readS3Config(env: Env): S3StorageConfig {
  const why = 'when STORAGE_DRIVER=s3';
  const bucket = readMatching(
    env,
    'S3_BUCKET',
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
    'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
  );
  const region = readMatching(env, 'S3_REGION', /^[a-z0-9-]{1,64}$/, 'must be a region name such as us-east-1 (or auto)');
  const accessKeyId = readMatching(env, 'S3_ACCESS_KEY_ID', /^\S{1,256}$/, 'must be 1-256 characters without spaces');
  const secretAccessKey = readMatching(env, 'S3_SECRET_ACCESS_KEY', /^\S{1,256}$/, 'must be 1-256 characters without spaces');
  if (accessKeyId && !secretAccessKey) throw new ConfigError('S3_SECRET_ACCESS_KEY', 'is required when S3_ACCESS_KEY_ID is set');
  if (secretAccessKey && !accessKeyId) throw new ConfigError('S3_ACCESS_KEY_ID', 'is required when S3_SECRET_ACCESS_KEY is set');
  return {
    bucket: required(bucket, 'S3_BUCKET', why),
    region: required(region, 'S3_REGION', why),
    endpoint: readUrl(env, 'S3_ENDPOINT', ['http:', 'https:']),
    publicEndpoint: readUrl(env, 'S3_PUBLIC_ENDPOINT', ['http:', 'https:']),
    accessKeyId,
    secretAccessKey,
    forcePathStyle: readBoolean(env, 'S3_FORCE_PATH_STYLE', false),
  };
}

function readStorageConfig(env: Env): StorageConfig {
  const driver = readEnum(env, 'STORAGE_DRIVER', ['local', 's3'] as const, 'local');
  return {
    driver,
    s3: driver === 's3' ? readS3Config(env) : undefined,
    signingSecret: readMatching(env, 'RECORDING_SIGNING_SECRET', /^\S{32,512}$/, 'must be 32-512 characters without spaces'),
    maxRecordingBytes: readInt(env, 'RECORDING_MAX_BYTES', MAX_RECORDING_BYTES, 1, MAX_RECORDING_BYTES),
  };
}

// ---- Voice (owned by src/voice) ----

export const TTS_PROVIDERS = ['builtin', 'openai', 'sarvam', 'none'] as const;
export const STT_PROVIDERS = ['none', 'openai', 'sarvam'] as const;

/** An OpenAI-compatible speech endpoint (OpenAI, speaches, Kokoro-FastAPI, vLLM). */
export interface OpenAiSpeechConfig {
  baseUrl: string;
  apiKey: string | undefined;
  model: string;
}

export interface VoiceConfig {
  /** Text-to-speech: the built-in offline synthesizer (the default), an OpenAI-compatible server, Sarvam's Bulbul, or none. */
  ttsProvider: (typeof TTS_PROVIDERS)[number];
  /** Speech-to-text: none (the browser sends text: `input` is `text`), an OpenAI-compatible server, or Sarvam. */
  sttProvider: (typeof STT_PROVIDERS)[number];
  /** TTS_BASE_URL, TTS_API_KEY, TTS_MODEL, and TTS_SAMPLE_RATE: the rate of the PCM it answers. */
  openAiTts: OpenAiSpeechConfig & { sampleRate: number };
  /** STT_BASE_URL, STT_API_KEY, STT_MODEL. */
  openAiStt: OpenAiSpeechConfig;
  sarvam: { baseUrl: string; apiKey: string | undefined };
  /** The longest one synthesis or one transcription may take. */
  ttsTimeoutMs: number;
  sttTimeoutMs: number;
  /** Worker threads of the built-in synthesizer. */
  ttsWorkers: number;
  /** Silence that ends the visitor's utterance. */
  endOfTurnMs: number;
  /** Spoken calls this instance serves at once (VoiceCapacity); the next is refused (503, or 1013 after `start`). */
  maxCalls: number;
}

function readVoiceConfig(env: Env): VoiceConfig {
  const apiKey = (name: string) => readMatching(env, name, /^\S{1,4096}$/, 'must be 1-4096 characters without spaces');
  const model = (name: string, fallback: string) =>
    readMatching(env, name, /^[\x21-\x7e]{1,200}$/, 'must be 1-200 printable ASCII characters without spaces') ?? fallback;
  const baseUrl = (name: string, fallback: string) => readUrl(env, name, ['http:', 'https:']) ?? fallback;
  return {
    ttsProvider: readEnum(env, 'TTS_PROVIDER', TTS_PROVIDERS, 'builtin'),
    sttProvider: readEnum(env, 'STT_PROVIDER', STT_PROVIDERS, 'none'),
    openAiTts: {
      baseUrl: baseUrl('TTS_BASE_URL', 'https://api.openai.com/v1'),
      apiKey: apiKey('TTS_API_KEY'),
      model: model('TTS_MODEL', 'gpt-4o-mini-tts'),
      sampleRate: readInt(env, 'TTS_SAMPLE_RATE', 24_000, 8_000, 48_000),
    },
    openAiStt: {
      baseUrl: baseUrl('STT_BASE_URL', 'https://api.openai.com/v1'),
      apiKey: apiKey('STT_API_KEY'),
      model: model('STT_MODEL', 'whisper-1'),
    },
    sarvam: { baseUrl: baseUrl('SARVAM_BASE_URL', 'https://api.sarvam.ai'), apiKey: apiKey('SARVAM_API_KEY') },
    ttsTimeoutMs: readInt(env, 'TTS_TIMEOUT_MS', 10_000, 100, 600_000),
    sttTimeoutMs: readInt(env, 'STT_TIMEOUT_MS', 10_000, 100, 600_000),
    ttsWorkers: readInt(env, 'TTS_WORKERS', 1, 1, 64),
    endOfTurnMs: readInt(env, 'VOICE_END_OF_TURN_MS', 700, 100, 10_000),
    // 100: the capacity measured on 2 cores (docs/benchmarks.md); 0 serves no voice socket (an API-only instance).
    maxCalls: readInt(env, 'VOICE_MAX_CALLS', 100, 0, 10_000),
  };
}

// ---- Telephony (owned by src/telephony) ----

export interface TelephonyConfig {
  /** Twilio's REST API, or a carrier that speaks it (a stand-in in tests). */
  twilioApiBaseUrl: string;
  /** The longest one request to the carrier may take, first byte to last. */
  carrierTimeoutMs: number;
  /** Server secret of the stored auth tokens' encryption; unset: generated once and kept under DATA_DIR. */
  secret: string | undefined;
  /** Phone calls in progress per account, inbound and outbound together. */
  maxActiveCalls: number;
  /** A phone call that runs longer is ended by the agent. */
  maxCallSeconds: number;
}

function readTelephonyConfig(env: Env): TelephonyConfig {
  return {
    twilioApiBaseUrl: readBaseUrl(env, 'TWILIO_API_BASE_URL') ?? 'https://api.twilio.com',
    carrierTimeoutMs: readInt(env, 'TWILIO_TIMEOUT_MS', 10_000, 100, 120_000),
    secret: readMatching(env, 'TELEPHONY_SECRET', /^\S{32,512}$/, 'must be 32-512 characters without spaces'),
    maxActiveCalls: readInt(env, 'PHONE_MAX_ACTIVE_CALLS', 10, 1, 100_000),
    maxCallSeconds: readInt(env, 'PHONE_MAX_CALL_SECONDS', 1800, 10, 14_400),
  };
}

// ---- Knowledge files (owned by src/knowledge-bases) ----

/** The contract's largest file source (section 16). */
export const MAX_KNOWLEDGE_FILE_BYTES = 20 * 1024 * 1024;

export interface KnowledgeFilesConfig {
  /** Largest accepted upload, at most the contract's 20 MiB. */
  maxFileBytes: number;
  /** Files read at once by this instance, each in a worker thread of its own. */
  extractionWorkers: number;
  /** The longest one file's reading may take before its worker is ended (the source fails). */
  extractionTimeoutMs: number;
  /** The heap one file's reading may use before its worker is ended (the source fails). */
  extractionMemoryMb: number;
}

function readKnowledgeFilesConfig(env: Env): KnowledgeFilesConfig {
  return {
    maxFileBytes: readInt(env, 'KNOWLEDGE_MAX_FILE_BYTES', MAX_KNOWLEDGE_FILE_BYTES, 1, MAX_KNOWLEDGE_FILE_BYTES),
    extractionWorkers: readInt(env, 'KNOWLEDGE_EXTRACTION_WORKERS', 1, 1, 64),
    extractionTimeoutMs: readInt(env, 'KNOWLEDGE_EXTRACTION_TIMEOUT_MS', 60_000, 1_000, 600_000),
    extractionMemoryMb: readInt(env, 'KNOWLEDGE_EXTRACTION_MEMORY_MB', 512, 64, 8_192),
  };
}
