import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { AgentRow } from '../agents/agents.repository';
import { AgentResponse, toAgentResponse } from '../agents/dto/agent-response.dto';
import { ApiErrors } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds } from '../common/responds';
import { AgentVersionRow } from './agent-versions.repository';
import { AgentVersionsService } from './agent-versions.service';
import { AgentVersionResponse, toAgentVersionResponse } from './dto/agent-version-response.dto';
import { ListVersionsQuery } from './dto/list-versions-query.dto';
import { PublishVersionDto } from './dto/publish-version.dto';

const AgentId = () => IntIdParam('agentId', 'Agent');
const Version = () => IntIdParam('version', 'Version');

@ApiTags('agents')
@Controller('agents/:agentId/versions')
export class AgentVersionsController {
  constructor(private readonly versions: AgentVersionsService) {}

  @Post()
  @ApiOperation({
    summary:
      "Publish the agent's current settings as its next version (1, 2, 3…): widget, phone and non-test API conversations started from now on run it",
  })
  @Responds(AgentVersionResponse, toAgentVersionResponse, { status: 201 })
  @ApiErrors(400, 404, 413, 415)
  publish(@CurrentAccount() account: CallerAccount, @AgentId() agentId: number, @Body() dto: PublishVersionDto): Promise<AgentVersionRow> {
    return this.versions.publish(account.id, agentId, dto.description!);
  }

  @Get()
  @ApiOperation({ summary: "The agent's versions, newest first (`before` pages on)" })
  @Responds([AgentVersionResponse], toAgentVersionResponse)
  @ApiErrors(400, 404)
  list(
    @CurrentAccount() account: CallerAccount,
    @AgentId() agentId: number,
    @Query() query: ListVersionsQuery,
  ): Promise<AgentVersionRow[]> {
    return this.versions.list(account.id, agentId, query.limit, query.before);
  }

  @Get(':version')
  @ApiOperation({ summary: 'One version of the agent' })
  @Responds(AgentVersionResponse, toAgentVersionResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @AgentId() agentId: number, @Version() version: number): Promise<AgentVersionRow> {
    return this.versions.get(account.id, agentId, version);
  }

  @Post(':version/restore')
  @ApiOperation({
    summary:
      "Copy the version's settings back onto the agent (its current settings; publish again to make them live). Knowledge bases and tools deleted since are left out",
  })
  @Responds(AgentResponse, toAgentResponse)
  @ApiErrors(400, 404)
  @ApiNoBody()
  async restore(
    @CurrentAccount() account: CallerAccount,
    @AgentId() agentId: number,
    @Version() version: number,
    @Body() body: unknown,
  ): Promise<AgentRow> {
    refuseBodyFields(body);
    return this.versions.restore(account.id, agentId, version);
  }
}
