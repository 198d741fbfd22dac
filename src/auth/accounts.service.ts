import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { Account } from './account.entity';
import { ApiKeysService, CreatedApiKey } from './api-keys.service';

export interface CreatedAccount {
  account: Account;
  key: CreatedApiKey;
}

@Injectable()
export class AccountsService {
  constructor(
    @InjectRepository(Account) private readonly accounts: Repository<Account>,
    private readonly apiKeys: ApiKeysService,
  ) {}

  /** Creates an account with its first API key. */
  async create(name: string, isPlatform = false): Promise<CreatedAccount> {
    return this.accounts.manager.transaction(async (manager) => {
      const account = await manager.save(manager.create(Account, { name, isPlatform }));
      return { account, key: await this.apiKeys.create(account.id, manager) };
    });
  }
}
