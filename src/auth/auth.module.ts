import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsService } from './accounts.service';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { AccountsRepository, ApiKeysRepository } from './auth.repository';
import { KeyUsage } from './key-usage';
import { VerifiedKeys } from './verified-keys';

@Module({
  controllers: [ApiKeysController],
  providers: [
    AccountsRepository,
    ApiKeysRepository,
    AccountsService,
    ApiKeysService,
    VerifiedKeys,
    KeyUsage,
    { provide: APP_GUARD, useClass: ApiKeyGuard },
  ],
  exports: [AccountsService, ApiKeysService],
})
export class AuthModule {}
