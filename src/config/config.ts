import * as path from 'node:path';

/**
 * Typed configuration, read once from the environment and validated.
 * A bad value throws a ConfigError naming the variable, which stops start-up.
 */
export interface AppConfig {
  port: number;
  /** PostgreSQL connection string; undefined means "run the embedded PostgreSQL". */
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  dbPoolSize: number;
  dbStatementTimeoutMs: number;
  dbConnectionTimeoutMs: number;
  publicBaseUrl: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  creditsPerMinute: number;
  recordingUrlTtlSeconds: number;
  /** Requests per window to the public widget routes, per site key and client IP. */
  widgetRateLimit: number;
  widgetRateLimitWindowSeconds: number;
}

export class ConfigError extends Error {
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

function readNumber(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(name, `must be a number between ${min} and ${max}, got "${raw}"`);
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

export function loadConfig(env: Env = process.env): AppConfig {
  const port = readInt(env, 'PORT', 3000, 0, 65535);
  return {
    port,
    databaseUrl: readUrl(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    dataDir: path.resolve(env.DATA_DIR?.trim() || '.data'),
    embeddedPgPort: readInt(env, 'EMBEDDED_PG_PORT', 54329, 1024, 65535),
    dbPoolSize: readInt(env, 'DB_POOL_SIZE', 10, 1, 200),
    dbStatementTimeoutMs: readInt(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 100, 600_000),
    dbConnectionTimeoutMs: readInt(env, 'DB_CONNECTION_TIMEOUT_MS', 3_000, 100, 60_000),
    publicBaseUrl: readUrl(env, 'PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`,
    logLevel: readEnum(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    creditsPerMinute: readNumber(env, 'CREDITS_PER_MINUTE', 1, 0, 1_000_000),
    recordingUrlTtlSeconds: readInt(env, 'RECORDING_URL_TTL_SECONDS', 300, 1, 7 * 24 * 3600),
    widgetRateLimit: readInt(env, 'WIDGET_RATE_LIMIT', 60, 1, 1_000_000),
    widgetRateLimitWindowSeconds: readInt(env, 'WIDGET_RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
  };
}
