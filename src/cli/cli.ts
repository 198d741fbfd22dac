/**
 * Account and API-key management, usable whether or not the server runs (it shares the server's database,
 * the embedded one included). Each command prints exactly one JSON value on the last line of stdout;
 * notes for people go to stderr.
 *
 *   npm run cli -- account:create --name "Acme" [--platform]
 *   npm run cli -- key:create --account 1 [--name "Reporting"] [--scopes read] [--expires-at 2027-06-30T23:59:59Z]
 *   npm run cli -- key:list --account 1
 *   npm run cli -- key:revoke --key-id 3
 */
import 'reflect-metadata';
import { parseArgs as parseOptions, ParseArgsConfig } from 'node:util';
import { DataSource } from 'typeorm';
import { standaloneAuthServices } from '../auth/accounts.service';
import { ApiKeyOptions } from '../auth/api-keys.service';
import type { ApiKeyRow } from '../auth/auth.repository';
import { API_KEY_SCOPES, ApiKeyScope } from '../auth/scopes';
import { codePointLength } from '../common/code-points';
import { parseRfc3339DateTime } from '../common/date-time';
import { describeStartupFailure, StartupError } from '../common/startup-error';
import { loadConfig } from '../config/config';
import { dataSourceOptions } from '../database/data-source-options';
import { Database } from '../database/database';
import { runMigrations } from '../database/migrate';
import { openDatabase } from '../database/open-database';

export class UsageError extends Error {}

type Flags = Record<string, string | true>;

/** Each command's options: a typo (`--scope read`) or a value on a switch (`--platform=yes`) is a usage error, never ignored. */
const COMMAND_OPTIONS: Record<string, ParseArgsConfig['options']> = {
  'account:create': { name: { type: 'string' }, platform: { type: 'boolean' } },
  'key:create': { account: { type: 'string' }, name: { type: 'string' }, scopes: { type: 'string' }, 'expires-at': { type: 'string' } },
  'key:list': { account: { type: 'string' } },
  'key:revoke': { 'key-id': { type: 'string' } },
};

/** Options parsed strictly by node:util's parseArgs (only those listed, no stray arguments); a UsageError naming `what` otherwise. */
export function parseStrictOptions(args: string[], options: ParseArgsConfig['options'], what: string): Flags {
  try {
    return { ...parseOptions({ args, options, strict: true, allowPositionals: false }).values };
  } catch (error) {
    throw new UsageError(`${what}: ${(error as Error).message.split('. ')[0]}`);
  }
}

/** The command and its options: only the command's own. */
export function parseArgs(argv: string[]): { command: string; flags: Flags } {
  const [command = '', ...rest] = argv;
  const options = COMMAND_OPTIONS[command];
  if (!options) throw new UsageError(command ? `Unknown command "${command}"` : 'No command given');
  return { command, flags: parseStrictOptions(rest, options, command) };
}

function requiredString(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

function requiredId(flags: Flags, name: string): number {
  const value = requiredString(flags, name);
  if (!/^[1-9][0-9]{0,9}$/.test(value) || Number(value) > 2_147_483_647) throw new UsageError(`--${name} must be a positive integer id`);
  return Number(value);
}

/** The optional flags of key:create, checked as POST /api-keys checks its body. */
function keyOptions(flags: Flags): ApiKeyOptions {
  const options: ApiKeyOptions = {};
  if (flags.name !== undefined) {
    const name = requiredString(flags, 'name');
    if (codePointLength(name) > 100) throw new UsageError('--name must be 1–100 characters');
    options.name = name;
  }
  if (flags.scopes !== undefined) {
    const scopes = requiredString(flags, 'scopes')
      .split(',')
      .map((scope) => scope.trim());
    if (scopes.some((scope) => !(API_KEY_SCOPES as readonly string[]).includes(scope)) || new Set(scopes).size !== scopes.length) {
      throw new UsageError(`--scopes must be a comma-separated subset of ${API_KEY_SCOPES.join(', ')}`);
    }
    options.scopes = scopes as ApiKeyScope[];
  }
  if (flags['expires-at'] !== undefined) {
    const expiresAt = parseRfc3339DateTime(requiredString(flags, 'expires-at'));
    if (!expiresAt || expiresAt.getTime() <= Date.now())
      throw new UsageError('--expires-at must be an RFC 3339 date-time in the future, such as 2027-06-30T23:59:59Z');
    options.expiresAt = expiresAt;
  }
  return options;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** A key as key:list prints it (contract section 9, plus name, scopes, lastUsedAt and expiresAt). */
const listedKey = (key: ApiKeyRow) => ({
  keyId: key.id,
  prefix: key.prefix,
  createdAt: key.createdAt.toISOString(),
  revokedAt: iso(key.revokedAt),
  name: key.name,
  scopes: key.scopes,
  lastUsedAt: iso(key.lastUsedAt),
  expiresAt: iso(key.expiresAt),
});

const USAGE = `Usage:
  npm run cli -- account:create --name "Acme" [--platform]
  npm run cli -- key:create --account <accountId> [--name "Reporting"] [--scopes read|write|read,write] [--expires-at <RFC 3339>]
  npm run cli -- key:list --account <accountId>
  npm run cli -- key:revoke --key-id <keyId>`;

/** Said to the person at the terminal (on stderr), after the command's JSON. */
const NOTES: Record<string, string> = {
  'account:create': 'Store the API key now: it is not shown again.',
  'key:create': 'Store the API key now: it is not shown again.',
};

/** Runs one command against the data source; returns the JSON value to print. */
export async function runCommand(dataSource: DataSource, command: string, flags: Flags): Promise<unknown> {
  const { accounts, apiKeys } = standaloneAuthServices(Database.of(dataSource));
  switch (command) {
    case 'account:create': {
      const name = requiredString(flags, 'name');
      if (codePointLength(name) > 200) throw new UsageError('--name must be at most 200 characters');
      const { account, key } = await accounts.create(name, flags.platform === true);
      return { accountId: account.id, name: account.name, isPlatform: account.isPlatform, keyId: key.key.id, apiKey: key.apiKey };
    }
    case 'key:create': {
      const accountId = requiredId(flags, 'account');
      const { key, apiKey } = await apiKeys.create(accountId, keyOptions(flags));
      return { keyId: key.id, accountId, apiKey, name: key.name, scopes: key.scopes, expiresAt: iso(key.expiresAt) };
    }
    case 'key:list':
      return (await apiKeys.list(requiredId(flags, 'account'))).map(listedKey);
    case 'key:revoke': {
      const key = await apiKeys.revokeAsOperator(requiredId(flags, 'key-id'));
      return { keyId: key.id, revokedAt: key.revokedAt.toISOString() };
    }
    default:
      throw new UsageError(command ? `Unknown command "${command}"` : 'No command given');
  }
}

async function main(): Promise<void> {
  const { command, flags } = parseArgs(process.argv.slice(2));
  const config = loadConfig();
  const database = await openDatabase(config);
  try {
    await runMigrations(database.url, config);
    const dataSource = await new DataSource({ ...dataSourceOptions(database.url, config), poolSize: 1 }).initialize();
    try {
      process.stdout.write(`${JSON.stringify(await runCommand(dataSource, command, flags))}\n`);
      if (NOTES[command]) process.stderr.write(`${NOTES[command]}\n`);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await database.stop();
  }
}

if (require.main === module) {
  main().catch((error: Error) => {
    // A start-up failure (configuration, DATA_DIR, port, database) in one line, like the server's.
    const message = error instanceof StartupError ? describeStartupFailure(error) : error.message;
    process.stderr.write(`${message}\n${error instanceof UsageError ? `${USAGE}\n` : ''}`);
    process.exit(error instanceof UsageError ? 2 : 1);
  });
}
