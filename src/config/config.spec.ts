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
    ['RECORDING_URL_TTL_SECONDS', '0'],
    ['DB_POOL_SIZE', '1.5'],
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

  it('reads CORS_ORIGINS as a list of origins and refuses anything else', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).corsOrigins).toEqual(['https://a.example.com', 'http://localhost:5173']);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example.com/path' })).toThrow('CORS_ORIGINS');
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow('CORS_ORIGINS');
  });

  it('accepts postgres:// and postgresql:// URLs', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/app' }).databaseUrl).toBe('postgres://u:p@db:5432/app');
    expect(loadConfig({ DATABASE_URL: 'postgresql://db/app' }).databaseUrl).toBe('postgresql://db/app');
  });

  it('reads the conversation settings: no provider by default, and the contract\'s defaults', () => {
    expect(loadConfig({})).toMatchObject({
      llm: { baseUrl: undefined, apiKey: undefined, timeoutMs: 30_000, maxTokens: 512 },
      ragPassages: 4,
      conversationIdleSeconds: 300,
    });
    const config = loadConfig({ LLM_BASE_URL: 'http://localhost:11434/v1/', LLM_API_KEY: 'sk-x', LLM_TIMEOUT_MS: '5000', LLM_MAX_TOKENS: '64', RAG_PASSAGES: '0' });
    expect(config.llm).toEqual({ baseUrl: 'http://localhost:11434/v1', apiKey: 'sk-x', timeoutMs: 5_000, maxTokens: 64 });
    expect(config.ragPassages).toBe(0);
  });
});
