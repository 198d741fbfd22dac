import { Injectable, NotFoundException, Optional } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, IsNull, Repository } from 'typeorm';
import { Account } from './account.entity';
import { ApiKey } from './api-key.entity';
import { generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-token';
import { CallerAccount } from './caller-account';
import { VerifiedKeys } from './verified-keys';

/** The account of an active key, by the key's hash (unique index on key_hash). */
const AUTHENTICATE_SQL = `SELECT account.id AS id, account.name AS name, account.is_platform AS "isPlatform"
  FROM api_keys key INNER JOIN accounts account ON account.id = key.account_id
  WHERE key.key_hash = $1 AND key.revoked_at IS NULL`;

export interface CreatedApiKey {
  keyId: number;
  accountId: number;
  apiKey: string;
}

@Injectable()
export class ApiKeysService {
  /** `verified`: the server's cache of verified keys; the CLI and scripts run without one. */
  constructor(
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    @Optional() private readonly verified?: VerifiedKeys,
  ) {}

  /** Creates a key; pass the transaction's manager to create it together with its account. */
  async create(accountId: number, manager: EntityManager = this.keys.manager): Promise<CreatedApiKey> {
    if (!(await manager.existsBy(Account, { id: accountId }))) throw new NotFoundException(`Account ${accountId} not found`);
    const { apiKey, prefix, keyHash } = generateApiKey();
    const key = await manager.save(manager.create(ApiKey, { accountId, prefix, keyHash }));
    return { keyId: key.id, accountId, apiKey };
  }

  list(accountId: number): Promise<ApiKey[]> {
    return this.keys.find({ where: { accountId }, order: { id: 'ASC' } });
  }

  /**
   * Revokes at once; revoking an already revoked key keeps its first revocation time. A trigger on api_keys
   * notifies every running server when the revocation commits (they drop their verified keys).
   */
  async revoke(keyId: number): Promise<ApiKey> {
    await this.keys.update({ id: keyId, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
    this.verified?.invalidate(); // this process at once, without waiting for its own notification
    const key = await this.keys.findOneBy({ id: keyId });
    if (!key) throw new NotFoundException(`API key ${keyId} not found`);
    return key;
  }

  /**
   * The account of an active key, or null for a malformed, unknown or revoked one. A malformed key is refused
   * without touching the database; unknown and revoked ones take the same path (hash, one indexed lookup), so
   * neither the answer nor its timing tells them apart, and the lookup is by hash, so no comparison of secrets
   * happens in the application. A key verified in the last few seconds is answered from the server's cache (see
   * VerifiedKeys: revocation empties it at once).
   * @param beforeLookup runs before the database is asked (not for a malformed or cached key); may throw
   */
  async authenticate(apiKey: string, beforeLookup?: () => Promise<void>): Promise<CallerAccount | null> {
    if (!isWellFormedApiKey(apiKey)) return null;
    const keyHash = hashApiKey(apiKey);
    const cached = this.verified?.get(keyHash);
    if (cached) return cached;
    await beforeLookup?.();
    const lookup = this.verified?.startLookup() ?? 0;
    const [row] = await this.keys.query<CallerAccount[]>(AUTHENTICATE_SQL, [keyHash]);
    if (!row) return null;
    const account: CallerAccount = Object.freeze({ id: row.id, name: row.name, isPlatform: row.isPlatform });
    this.verified?.remember(lookup, keyHash, account);
    return account;
  }
}
