import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { AccountRow, AccountsRepository, ApiKeysRepository } from './auth.repository';
import { ApiKeyOptions, ApiKeysService, CreatedApiKey } from './api-keys.service';

export interface CreatedAccount {
  account: AccountRow;
  key: CreatedApiKey;
}

@Injectable()
export class AccountsService {
  constructor(
    private readonly db: Database,
    private readonly accounts: AccountsRepository,
    private readonly apiKeys: ApiKeysService,
  ) {}

  /** Creates an account with its first API key, in one transaction. */
  async create(name: string, isPlatform = false, key: ApiKeyOptions = {}): Promise<CreatedAccount> {
    return this.db.transaction(async (sql) => {
      const account = await this.accounts.insert(name, isPlatform, sql);
      return { account, key: await this.apiKeys.create(account.id, key, sql) };
    });
  }
}

/**
 * The account and key services outside the server (the CLI, the seed and soak scripts), on their own Database:
 * without the server's cache of verified keys and record of their use.
 */
export function standaloneAuthServices(db: Database): { accounts: AccountsService; apiKeys: ApiKeysService } {
  const apiKeys = new ApiKeysService(new ApiKeysRepository(db));
  return { accounts: new AccountsService(db, new AccountsRepository(db), apiKeys), apiKeys };
}
