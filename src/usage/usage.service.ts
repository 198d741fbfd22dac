import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { UsageQuery } from './dto/usage-query.dto';
import { resolveUsageRange } from './usage-range';
import { UsageAgentRow, UsageDayRow, UsageRepository } from './usage.repository';

export type Usage = { groupBy: 'day'; rows: UsageDayRow[] } | { groupBy: 'agent'; rows: UsageAgentRow[] };

/** An account's usage over a range of UTC days: calls, their duration and the credits they used (never test calls). */
@Injectable()
export class UsageService {
  constructor(
    private readonly usage: UsageRepository,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  async get(accountId: number, query: UsageQuery, now = new Date()): Promise<Usage> {
    const range = resolveUsageRange(query, now);
    const rate = this.config.creditsPerMinute;
    return query.groupBy === 'agent'
      ? { groupBy: 'agent', rows: await this.usage.byAgent(accountId, range, rate) }
      : { groupBy: 'day', rows: await this.usage.byDay(accountId, range, rate) };
  }
}
