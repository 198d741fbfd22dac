import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { Responds } from '../common/responds';
import { UsageQuery } from './dto/usage-query.dto';
import { toUsageResponse, UsageAgentResponse, UsageDayResponse } from './dto/usage-response.dto';
import { UsageAgentRow, UsageDayRow } from './usage.repository';
import { UsageService } from './usage.service';

@ApiTags('usage')
@Controller('usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  @Get()
  @ApiOperation({
    summary: 'Calls, their duration and the credits they used, per UTC day or per agent (test calls never count)',
    description:
      'Over `from` to `to` (UTC days, both included; by default the last 30 days, today included; at most 366 days). ' +
      '`groupBy=day` lists every day of the range, oldest first, days without calls as zeros; `groupBy=agent` lists the ' +
      'agents that handled calls, by id, the calls without an agent (`agentId: null`) last. `creditsUsed` is the sum of ' +
      "each call's `creditsUsed` as `GET /calls/{callId}` shows it (rounded per call), so both groupings add up to the same total.",
  })
  @Responds([UsageDayResponse, UsageAgentResponse], toUsageResponse, {
    description: 'Per day (`groupBy=day`) or per agent (`groupBy=agent`)',
  })
  @ApiErrors([400, 'A date that is not YYYY-MM-DD, from after to, a range over 366 days, or an unknown groupBy (with `details`)'])
  async get(@CurrentAccount() account: CallerAccount, @Query() query: UsageQuery): Promise<UsageDayRow[] | UsageAgentRow[]> {
    return (await this.usage.get(account.id, query)).rows;
  }
}
