import { ForbiddenException, Injectable, NotFoundException, Optional } from '@nestjs/common';
import type { Sql } from '../database/database';
import { ActiveKeyRow, ApiKeyRow, ApiKeysRepository, RevokedKeyRow } from './auth.repository';
import { generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-token';
import { CallerAccount } from './caller-account';
import { KeyUsage } from './key-usage';
import { API_KEY_SCOPES, ApiKeyScope, canonicalScopes } from './scopes';
import { VerifiedKeys } from './verified-keys';

/** The name of a key made without one (the CLI's, and the keys made before keys had names). */
export const DEFAULT_KEY_NAME = 'CLI key';

export interface ApiKeyOptions {
  name?: string;
  /** Default: every scope. */
  scopes?: readonly ApiKeyScope[];
  expiresAt?: Date | null;
}

/** A new key: its row, and the key itself, which is shown this once and never stored. */
export interface CreatedApiKey {
  key: ApiKeyRow;
  apiKey: string;
}

const FOREIGN_KEY_VIOLATION = '23503';
const keyNotFound = (keyId: number) => new NotFoundException(`API key ${keyId} not found`);

function toCallerAccount(row: ActiveKeyRow): CallerAccount {
  return Object.freeze({
    id: row.accountId,
    name: row.accountName,
    isPlatform: row.isPlatform,
    keyId: row.keyId,
    scopes: Object.freeze(row.scopes),
    keyExpiresAt: row.expiresAt,
  });
}

/** API keys: creation, listing, revocation and the check of every request's key. The SQL is ApiKeysRepository's. */
@Injectable()
export class ApiKeysService {
  /** `verified` and `usage`: the server's cache of verified keys and its record of their use; the CLI and scripts run without. */
  constructor(
    private readonly keys: ApiKeysRepository,
    @Optional() private readonly verified?: VerifiedKeys,
    @Optional() private readonly usage?: KeyUsage,
  ) {}

  /**
   * `POST /api-keys`: a key made by the key of a request, which may give it no scope it lacks itself and no
   * life beyond its own (403 otherwise): a `write` key handed to a system that only posts calls cannot make
   * itself a `read` key, nor a key that expires a key that does not. Left out, the scopes and the expiry are
   * the creating key's (every scope and none for a key of every scope that does not expire, as the contract says).
   */
  async createFor(caller: CallerAccount, options: ApiKeyOptions): Promise<CreatedApiKey> {
    const scopes = options.scopes ?? caller.scopes;
    const missing = scopes.filter((scope) => !caller.scopes.includes(scope));
    if (missing.length > 0) {
      throw new ForbiddenException(
        `This API key does not have the ${missing.join(', ')} scope, so a key it creates cannot have it (its scopes: ${caller.scopes.join(', ')})`,
      );
    }
    const callerExpiry = caller.keyExpiresAt;
    const expiresAt = options.expiresAt === undefined ? callerExpiry : options.expiresAt;
    if (callerExpiry && (!expiresAt || expiresAt > callerExpiry)) {
      throw new ForbiddenException(
        `This API key expires at ${callerExpiry.toISOString()}, so a key it creates must have an expiresAt no later than that`,
      );
    }
    return this.create(caller.id, { ...options, scopes, expiresAt });
  }

  /** Creates a key; pass a transaction to create it together with its account. An unknown account is a 404. */
  async create(accountId: number, options: ApiKeyOptions = {}, sql?: Sql): Promise<CreatedApiKey> {
    const { apiKey, prefix, keyHash } = generateApiKey();
    const fields = {
      name: options.name ?? DEFAULT_KEY_NAME,
      scopes: canonicalScopes(options.scopes ?? API_KEY_SCOPES),
      expiresAt: options.expiresAt ?? null,
      prefix,
      keyHash,
    };
    try {
      const key = await this.keys.insert(accountId, fields, sql);
      this.verified?.rememberPrefix(prefix);
      return { key, apiKey };
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === FOREIGN_KEY_VIOLATION)
        throw new NotFoundException(`Account ${accountId} not found`);
      throw error;
    }
  }

  list(accountId: number): Promise<ApiKeyRow[]> {
    return this.keys.list(accountId);
  }

  /**
   * Revokes one of the account's keys at once (the key of the request itself too); revoking it again keeps the
   * first time. A trigger notifies every running server when the revocation commits; this one forgets its
   * verified keys at once, without waiting for its own notification.
   */
  async revoke(accountId: number, keyId: number): Promise<ApiKeyRow> {
    const key = await this.keys.revoke(accountId, keyId);
    this.verified?.invalidate();
    return key ?? Promise.reject(keyNotFound(keyId));
  }

  /** The operator's revocation (CLI), by key id alone. */
  async revokeAsOperator(keyId: number): Promise<RevokedKeyRow> {
    const key = await this.keys.revokeById(keyId);
    this.verified?.invalidate();
    return key ?? Promise.reject(keyNotFound(keyId));
  }

  /**
   * The account of an active key, or null for a malformed, unknown, revoked or expired one. A malformed key is
   * refused without touching the database; the others take the same path (hash, one indexed lookup), so neither
   * the answer nor its timing tells them apart, and the lookup is by hash, so no comparison of secrets happens
   * in the application. A key verified in the last few seconds is answered from the server's cache (see
   * VerifiedKeys: revocation empties it at once, and an entry never outlives its key). Each use is recorded
   * (KeyUsage: at most one write a minute per key, not awaited).
   * @param beforeLookup runs before the database is asked for a key that no key made has the prefix of (so not for
   *   a malformed key, a cached one, or one that may exist: see VerifiedKeys); may throw
   */
  async authenticate(apiKey: string, beforeLookup?: () => Promise<void>): Promise<CallerAccount | null> {
    if (!isWellFormedApiKey(apiKey)) return null;
    const keyHash = hashApiKey(apiKey);
    let account = this.verified?.get(keyHash);
    if (!account) {
      if (!this.verified?.mayExist(apiKey)) await beforeLookup?.();
      const lookup = this.verified?.startLookup() ?? 0;
      const row = await this.keys.findActiveByHash(keyHash);
      if (!row) return null;
      account = toCallerAccount(row);
      this.verified?.remember(lookup, keyHash, account, row.expiresAt);
    }
    this.usage?.record(account);
    return account;
  }
}
