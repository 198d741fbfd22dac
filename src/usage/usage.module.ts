import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsageRepository } from './usage.repository';
import { UsageService } from './usage.service';

/** `GET /usage`: the account's calls aggregated per UTC day or per agent. */
@Module({
  controllers: [UsageController],
  providers: [UsageService, UsageRepository],
})
export class UsageModule {}
