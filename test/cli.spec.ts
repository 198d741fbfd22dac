import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { parseArgs, runCommand, UsageError } from '../src/cli/cli';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..');

/** Runs the real CLI in its own process, as a user would, against the test database. */
async function cli(...args: string[]): Promise<{ stdout: string; stderr: string; lastLine: unknown }> {
  const { stdout, stderr } = await run(process.execPath, ['-r', './scripts/register.js', 'src/cli/cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL },
  });
  const lines = stdout.trim().split('\n');
  return { stdout, stderr, lastLine: JSON.parse(lines[lines.length - 1]) };
}

/** The CLI's exit code and stderr, for a run expected to fail. */
async function cliResult(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    return { code: 0, stderr: (await cli(...args)).stderr };
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr };
  }
}

describe('CLI', () => {
  let dataSource: DataSource;
  beforeAll(async () => {
    dataSource = await new DataSource(dataSourceOptions(process.env.DATABASE_URL!, loadConfig())).initialize();
  });
  afterAll(() => dataSource.destroy());

  it('parses flags in both forms', () => {
    expect(parseArgs(['account:create', '--name', 'Acme Corp', '--platform'])).toEqual({
      command: 'account:create',
      flags: { name: 'Acme Corp', platform: true },
    });
    expect(parseArgs(['key:list', '--account=3'])).toEqual({ command: 'key:list', flags: { account: '3' } });
    expect(() => parseArgs(['key:list', 'stray'])).toThrow(UsageError);
  });

  it.each([
    ['an option of another command', ['key:list', '--account', '1', '--name', 'x'], "key:list: Unknown option '--name'"],
    ['a typo', ['key:create', '--account', '1', '--scope', 'read'], "key:create: Unknown option '--scope'"],
    [
      'a value on a switch',
      ['account:create', '--name', 'Acme', '--platform=true'],
      "account:create: Option '--platform' does not take an argument",
    ],
    ['an option without its value', ['key:revoke', '--key-id'], "key:revoke: Option '--key-id <value>' argument missing"],
    ['an unknown command', ['key:explode'], 'Unknown command "key:explode"'],
  ])('refuses %s as a usage error, never ignoring it', (_case, argv, message) => {
    expect(() => parseArgs(argv)).toThrow(new UsageError(message));
  });

  it('exits 2 with the usage for an option it does not know, creating nothing (real process)', async () => {
    const account = (await runCommand(dataSource, 'account:create', { name: 'Typo' })) as { accountId: number };
    const result = await cliResult('key:create', '--account', String(account.accountId), '--scope', 'read');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("key:create: Unknown option '--scope'");
    expect(result.stderr).toContain('Usage:');
    expect(await runCommand(dataSource, 'key:list', { account: String(account.accountId) })).toHaveLength(1);
  });

  it('account:create prints the account and its key as JSON on the last line (real process)', async () => {
    const { lastLine, stderr } = await cli('account:create', '--name', 'Acme');
    expect(lastLine).toEqual({
      accountId: expect.any(Number),
      name: 'Acme',
      isPlatform: false,
      keyId: expect.any(Number),
      apiKey: expect.stringMatching(/^vak_/),
    });
    expect(stderr).toContain('not shown again');
  }, 30_000);

  it('account:create --platform makes the platform account', async () => {
    const created = (await runCommand(dataSource, 'account:create', { name: 'Platform', platform: true })) as { isPlatform: boolean };
    expect(created.isPlatform).toBe(true);
  });

  it('key:create, key:list and key:revoke', async () => {
    const account = (await runCommand(dataSource, 'account:create', { name: 'Keys' })) as { accountId: number; keyId: number };
    const key = (await runCommand(dataSource, 'key:create', { account: String(account.accountId) })) as Record<string, unknown>;
    expect(key).toEqual({
      keyId: expect.any(Number),
      accountId: account.accountId,
      apiKey: expect.stringMatching(/^vak_/),
      name: 'CLI key',
      scopes: ['read', 'write'],
      expiresAt: null,
    });

    const revoked = (await runCommand(dataSource, 'key:revoke', { 'key-id': String(account.keyId) })) as Record<string, unknown>;
    expect(revoked).toEqual({ keyId: account.keyId, revokedAt: expect.stringMatching(/Z$/) });

    const list = (await runCommand(dataSource, 'key:list', { account: String(account.accountId) })) as Record<string, unknown>[];
    const listed = { name: 'CLI key', scopes: ['read', 'write'], lastUsedAt: null, expiresAt: null };
    expect(list).toEqual([
      {
        keyId: account.keyId,
        prefix: expect.stringMatching(/^vak_.{8}$/),
        createdAt: expect.any(String),
        revokedAt: revoked.revokedAt,
        ...listed,
      },
      { keyId: key.keyId, prefix: (key.apiKey as string).slice(0, 12), createdAt: expect.any(String), revokedAt: null, ...listed },
    ]);
    expect(JSON.stringify(list)).not.toContain(key.apiKey as string);
  });

  it('key:create --name --scopes --expires-at makes a named, read-only, expiring key (real process)', async () => {
    const account = (await runCommand(dataSource, 'account:create', { name: 'Scoped' })) as { accountId: number };
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const { lastLine } = await cli(
      'key:create',
      '--account',
      String(account.accountId),
      '--name',
      'Reporting ✓',
      '--scopes',
      'read',
      '--expires-at',
      expiresAt,
    );
    expect(lastLine).toEqual({
      keyId: expect.any(Number),
      accountId: account.accountId,
      apiKey: expect.stringMatching(/^vak_/),
      name: 'Reporting ✓',
      scopes: ['read'],
      expiresAt,
    });
    const list = (await runCommand(dataSource, 'key:list', { account: String(account.accountId) })) as {
      name: string;
      scopes: string[];
      expiresAt: string;
    }[];
    expect(list[1]).toMatchObject({ name: 'Reporting ✓', scopes: ['read'], expiresAt });
    const both = (await runCommand(dataSource, 'key:create', { account: String(account.accountId), scopes: 'write, read' })) as {
      scopes: string[];
    };
    expect(both.scopes).toEqual(['read', 'write']);
  }, 30_000);

  it.each([
    ['an unknown scope', { scopes: 'admin' }],
    ['a repeated scope', { scopes: 'read,read' }],
    ['no scope', { scopes: ',' }],
    ['an empty name', { name: ' ' }],
    ['a name of 101 characters', { name: '😀'.repeat(101) }],
    ['an expiry in the past', { 'expires-at': '2020-01-01T00:00:00Z' }],
    ['an expiry without an offset', { 'expires-at': '2099-01-01T00:00:00' }],
  ])('key:create refuses %s, creating nothing', async (_, flags) => {
    const account = (await runCommand(dataSource, 'account:create', { name: 'Refused' })) as { accountId: number };
    await expect(runCommand(dataSource, 'key:create', { account: String(account.accountId), ...flags })).rejects.toThrow(UsageError);
    expect(await runCommand(dataSource, 'key:list', { account: String(account.accountId) })).toHaveLength(1);
  });

  it.each([
    ['an unknown command', 'key:explode', {}, UsageError],
    ['a missing name', 'account:create', {}, UsageError],
    ['a bad account id', 'key:create', { account: 'abc' }, UsageError],
  ])('refuses %s', async (_, command, flags, type) => {
    await expect(runCommand(dataSource, command, flags)).rejects.toThrow(type);
  });

  it('refuses keys for an unknown account or key', async () => {
    await expect(runCommand(dataSource, 'key:create', { account: '2147483647' })).rejects.toThrow('Account 2147483647 not found');
    await expect(runCommand(dataSource, 'key:revoke', { 'key-id': '2147483647' })).rejects.toThrow('API key 2147483647 not found');
  });
});
