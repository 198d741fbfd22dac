import * as path from 'node:path';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('has defaults for everything', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      databaseUrl: undefined,
      dataDir: path.resolve('.data'),
      publicBaseUrl: 'http://localhost:3000',
      creditsPerMinute: 1,
      recordingUrlTtlSeconds: 300,
      logLevel: 'info',
      fetchAllowPrivateAddresses: false,
    });
  });

  it('reads FETCH_ALLOW_PRIVATE_ADDRESSES as a boolean', () => {
    expect(loadConfig({ FETCH_ALLOW_PRIVATE_ADDRESSES: 'true' }).fetchAllowPrivateAddresses).toBe(true);
    expect(loadConfig({ FETCH_ALLOW_PRIVATE_ADDRESSES: 'false' }).fetchAllowPrivateAddresses).toBe(false);
    expect(() => loadConfig({ FETCH_ALLOW_PRIVATE_ADDRESSES: 'sometimes' })).toThrow('FETCH_ALLOW_PRIVATE_ADDRESSES');
  });

  it('derives PUBLIC_BASE_URL from PORT, and trims a trailing slash from a given one', () => {
    expect(loadConfig({ PORT: '8080' }).publicBaseUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/' }).publicBaseUrl).toBe('https://api.example.com');
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['PUBLIC_BASE_URL', 'ftp://example.com'],
    ['LOG_LEVEL', 'loud'],
    ['CREDITS_PER_MINUTE', 'lots'],
    ['CREDITS_PER_MINUTE', '-2'],
    ['CREDITS_PER_MINUTE', '0.12345'],
    ['CREDITS_PER_MINUTE', '1e2'],
    ['CREDITS_PER_MINUTE', '1,5'],
    ['RECORDING_URL_TTL_SECONDS', '0'],
    ['DB_POOL_SIZE', '1.5'],
    ['EMBEDDED_PG_PORT', '80'],
    ['EMBEDDED_PG_PORT', 'auto'],
    ['DB_MIGRATION_LOCK_TIMEOUT_MS', '0'],
    ['UNAUTHENTICATED_RATE_LIMIT', '-1'],
    ['LLM_BASE_URL', 'localhost:11434'],
    ['LLM_BASE_URL', 'ftp://llm.example.com/v1'],
    ['LLM_API_KEY', 'two words'],
    ['LLM_TIMEOUT_MS', '0'],
    ['LLM_TIMEOUT_MS', 'soon'],
    ['LLM_MAX_TOKENS', '0'],
    ['RAG_PASSAGES', '21'],
    ['CONVERSATION_IDLE_SECONDS', '5'],
    ['CONVERSATION_IDLE_SECONDS', '1e3'],
  ])('stops on a bad %s (%s) with a message naming it', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(variable);
  });

  it('reads TRUST_PROXY as a hop count or proxy addresses and subnets', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: ' 2 ' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.7,fd00::/8, ::1, loopback' }).trustProxy).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      'fd00::/8',
      '::1',
      'loopback',
    ]);
  });

  it('refuses TRUST_PROXY=true (it trusts the client-written X-Forwarded-For) with a message that says to use a hop count', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(ConfigError);
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(
      /^Invalid configuration: TRUST_PROXY must not be true: .*fake its IP.*hop count/,
    );
  });

  it.each(['yes', '10.0.0.300', '10.0.0.0/33', 'fd00::/129', 'proxy.example.com', '10.0.0.1/8/8', '1.5', '-1', '10.0.0.1,'])(
    'refuses TRUST_PROXY=%j with a message naming it',
    (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/^Invalid configuration: TRUST_PROXY /);
    },
  );

  it('reads CORS_ORIGINS as a list of origins and refuses anything else', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).corsOrigins).toEqual([
      'https://a.example.com',
      'http://localhost:5173',
    ]);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example.com/path' })).toThrow('CORS_ORIGINS');
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow('CORS_ORIGINS');
  });

  it('leaves EMBEDDED_PG_PORT unset unless given (54329, or a free port when that one is taken)', () => {
    expect(loadConfig({}).embeddedPgPort).toBeUndefined();
    expect(loadConfig({ EMBEDDED_PG_PORT: ' ' }).embeddedPgPort).toBeUndefined();
    expect(loadConfig({ EMBEDDED_PG_PORT: '54329' }).embeddedPgPort).toBe(54329);
  });

  it('has defaults for the migration lock timeout and the limit of requests without a valid key', () => {
    expect(loadConfig({})).toMatchObject({ dbMigrationLockTimeoutMs: 5_000, unauthenticatedRateLimit: 60 });
    expect(loadConfig({ UNAUTHENTICATED_RATE_LIMIT: '0' }).unauthenticatedRateLimit).toBe(0);
  });

  it('reads JOB_WORKERS (default true)', () => {
    expect(loadConfig({}).jobWorkers).toBe(true);
    expect(loadConfig({ JOB_WORKERS: 'false' }).jobWorkers).toBe(false);
    expect(() => loadConfig({ JOB_WORKERS: 'sometimes' })).toThrow('JOB_WORKERS');
  });

  it('reads the webhook settings, with their defaults, and refuses bad ones', () => {
    expect(loadConfig({}).webhooks).toEqual({
      allowPrivateTargets: false,
      timeoutMs: 10_000,
      retrySeconds: [10, 60, 300, 1800, 7200, 21600, 43200],
      retentionDays: 30,
    });
    expect(
      loadConfig({
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_TIMEOUT_MS: '500',
        WEBHOOK_RETRY_SECONDS: '1, 2,3',
        WEBHOOK_RETENTION_DAYS: '1',
      }).webhooks,
    ).toEqual({
      allowPrivateTargets: true,
      timeoutMs: 500,
      retrySeconds: [1, 2, 3],
      retentionDays: 1,
    });
    expect(loadConfig({ WEBHOOK_RETENTION_DAYS: '3650' }).webhooks.retentionDays).toBe(3650);
    for (const [variable, value] of [
      ['WEBHOOK_ALLOW_PRIVATE_TARGETS', 'maybe'],
      ['WEBHOOK_TIMEOUT_MS', '50'],
      ['WEBHOOK_TIMEOUT_MS', 'ten'],
      ['WEBHOOK_RETRY_SECONDS', '10,,60'],
      ['WEBHOOK_RETRY_SECONDS', '10,-1'],
      ['WEBHOOK_RETRY_SECONDS', '1.5'],
      ['WEBHOOK_RETRY_SECONDS', '999999999'],
      ['WEBHOOK_RETRY_SECONDS', Array(21).fill('1').join(',')],
      ['WEBHOOK_RETENTION_DAYS', '0'],
      ['WEBHOOK_RETENTION_DAYS', '3651'],
      ['WEBHOOK_RETENTION_DAYS', '7.5'],
    ]) {
      expect(() => loadConfig({ [variable]: value })).toThrow(variable);
    }
  });

  it('reads CREDITS_PER_MINUTE with up to 4 decimals (the credits are computed exactly in those units)', () => {
    expect(loadConfig({ CREDITS_PER_MINUTE: '1.5' }).creditsPerMinute).toBe(1.5);
    expect(loadConfig({ CREDITS_PER_MINUTE: '0.0001' }).creditsPerMinute).toBe(0.0001);
    expect(loadConfig({ CREDITS_PER_MINUTE: ' 2 ' }).creditsPerMinute).toBe(2);
  });

  it('accepts postgres:// and postgresql:// URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/app' }).databaseUrl).toBe('postgres://u:p@db:5432/app');
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/app' }).databaseUrl).toBe('postgresql://db/app');
  });

  it("reads the conversation settings: no provider by default, and the contract's defaults", () => {
    expect(loadConfig({})).toMatchObject({
      llm: { baseUrl: undefined, apiKey: undefined, timeoutMs: 30_000, maxTokens: 512 },
      ragPassages: 4,
      conversationIdleSeconds: 300,
    });
    const config = loadConfig({
      LLM_BASE_URL: 'http://localhost:11434/v1/',
      LLM_API_KEY: 'sk-x',
      LLM_TIMEOUT_MS: '5000',
      LLM_MAX_TOKENS: '64',
      RAG_PASSAGES: '0',
    });
    expect(config.llm).toEqual({ baseUrl: 'http://localhost:11434/v1', apiKey: 'sk-x', timeoutMs: 5_000, maxTokens: 64 });
    expect(config.ragPassages).toBe(0);
  });

  it('reads IDEMPOTENCY_SECRET (unset by default: a secret kept in DATA_DIR) and refuses one under 32 characters or with spaces', () => {
    expect(loadConfig({}).idempotencySecret).toBeUndefined();
    const secret = 'x'.repeat(32);
    expect(loadConfig({ IDEMPOTENCY_SECRET: secret }).idempotencySecret).toBe(secret);
    expect(loadConfig({ IDEMPOTENCY_SECRET: 'x'.repeat(512) }).idempotencySecret).toHaveLength(512);
    for (const bad of ['x'.repeat(31), 'x'.repeat(513), `${'x'.repeat(31)} y`]) {
      expect(() => loadConfig({ IDEMPOTENCY_SECRET: bad })).toThrow('IDEMPOTENCY_SECRET');
    }
  });
});
