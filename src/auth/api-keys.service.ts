import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, IsNull, Repository } from 'typeorm';
import { Account } from './account.entity';
import { ApiKey } from './api-key.entity';
import { generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-token';
import { CallerAccount } from './caller-account';

export interface CreatedApiKey {
  keyId: number;
  accountId: number;
  apiKey: string;
}

@Injectable()
export class ApiKeysService {
  constructor(@InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>) {}

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

  /** Revokes at once; revoking an already revoked key keeps its first revocation time. */
  async revoke(keyId: number): Promise<ApiKey> {
    await this.keys.update({ id: keyId, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
    const key = await this.keys.findOneBy({ id: keyId });
    if (!key) throw new NotFoundException(`API key ${keyId} not found`);
    return key;
  }

  /**
   * The account of an active key, or null for a malformed, unknown or revoked one. All three take the same
   * path (hash, one indexed lookup), so neither the answer nor its timing tells them apart; the lookup is by
   * hash, so no comparison of secrets happens in the application.
   */
  async authenticate(apiKey: string): Promise<CallerAccount | null> {
    const row = await this.keys
      .createQueryBuilder('key')
      .innerJoin('key.account', 'account')
      .select(['account.id AS id', 'account.name AS name', 'account.is_platform AS "isPlatform"'])
      .where('key.key_hash = :keyHash AND key.revoked_at IS NULL', { keyHash: hashApiKey(apiKey) })
      .getRawOne<CallerAccount>();
    return row && isWellFormedApiKey(apiKey) ? row : null;
  }
}
