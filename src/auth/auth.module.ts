import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Account } from './account.entity';
import { AccountsService } from './accounts.service';
import { ApiKey } from './api-key.entity';
import { ApiKeyGuard } from './api-key.guard';
import { ApiKeysService } from './api-keys.service';
import { VerifiedKeys } from './verified-keys';

@Module({
  imports: [TypeOrmModule.forFeature([Account, ApiKey])],
  providers: [AccountsService, ApiKeysService, VerifiedKeys, { provide: APP_GUARD, useClass: ApiKeyGuard }],
  exports: [AccountsService, ApiKeysService],
})
export class AuthModule {}
