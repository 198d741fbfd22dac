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
    });
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
    ['RECORDING_URL_TTL_SECONDS', '0'],
    ['DB_POOL_SIZE', '1.5'],
  ])('stops on a bad %s (%s) with a message naming it', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(variable);
  });

  it('reads CORS_ORIGINS as a list of origins and refuses anything else', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).corsOrigins).toEqual(['https://a.example.com', 'http://localhost:5173']);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example.com/path' })).toThrow('CORS_ORIGINS');
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow('CORS_ORIGINS');
  });

  it('reads JOB_WORKERS (default true)', () => {
    expect(loadConfig({}).jobWorkers).toBe(true);
    expect(loadConfig({ JOB_WORKERS: 'false' }).jobWorkers).toBe(false);
    expect(() => loadConfig({ JOB_WORKERS: 'sometimes' })).toThrow('JOB_WORKERS');
  });

  it('reads the webhook settings, with their defaults, and refuses bad ones', () => {
    expect(loadConfig({}).webhooks).toEqual({ allowPrivateTargets: false, timeoutMs: 10_000, retrySeconds: [10, 60, 300, 1800, 7200, 21600, 43200] });
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: '500', WEBHOOK_RETRY_SECONDS: '1, 2,3' }).webhooks).toEqual({
      allowPrivateTargets: true,
      timeoutMs: 500,
      retrySeconds: [1, 2, 3],
    });
    for (const [variable, value] of [
      ['WEBHOOK_ALLOW_PRIVATE_TARGETS', 'maybe'],
      ['WEBHOOK_TIMEOUT_MS', '50'],
      ['WEBHOOK_TIMEOUT_MS', 'ten'],
      ['WEBHOOK_RETRY_SECONDS', '10,,60'],
      ['WEBHOOK_RETRY_SECONDS', '10,-1'],
      ['WEBHOOK_RETRY_SECONDS', '1.5'],
      ['WEBHOOK_RETRY_SECONDS', '999999999'],
      ['WEBHOOK_RETRY_SECONDS', Array(21).fill('1').join(',')],
    ]) {
      expect(() => loadConfig({ [variable]: value })).toThrow(variable);
    }
  });

  it('accepts postgres:// and postgresql:// URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/app' }).databaseUrl).toBe('postgres://u:p@db:5432/app');
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/app' }).databaseUrl).toBe('postgresql://db/app');
  });
});
