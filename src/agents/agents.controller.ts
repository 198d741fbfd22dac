import { Body, Controller, Delete, Get, Patch, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { Responds } from '../common/responds';
import { AgentRow } from './agents.repository';
import { AgentsService } from './agents.service';
import { AgentResponse, toAgentResponse } from './dto/agent-response.dto';
import { CreateAgentDto } from './dto/create-agent.dto';
import { UpdateAgentDto } from './dto/update-agent.dto';

const AgentId = () => IntIdParam('agentId', 'Agent');

@ApiTags('agents')
@Controller('agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @ApiOperation({ summary: 'List every agent of the account, by id' })
  @Responds([AgentResponse], toAgentResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<AgentRow[]> {
    return this.agents.list(account.id);
  }

  @Post()
  @ApiOperation({ summary: 'Create an agent; every field is optional' })
  @Responds(AgentResponse, toAgentResponse, { status: 201 })
  @ApiErrors(400, [403, "Preview or next-generation voice on an account other than the platform's"], 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateAgentDto): Promise<AgentRow> {
    return this.agents.create(account, dto);
  }

  @Get(':agentId')
  @ApiOperation({ summary: 'Get one agent' })
  @Responds(AgentResponse, toAgentResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @AgentId() agentId: number): Promise<AgentRow> {
    return this.agents.get(account.id, agentId);
  }

  @Patch(':agentId')
  @ApiOperation({ summary: "Change some of an agent's fields" })
  @Responds(AgentResponse, toAgentResponse)
  @ApiErrors(400, [403, "Preview or next-generation voice on an account other than the platform's"], 404, 413, 415)
  update(@CurrentAccount() account: CallerAccount, @AgentId() agentId: number, @Body() dto: UpdateAgentDto): Promise<AgentRow> {
    return this.agents.update(account, agentId, dto);
  }

  @Delete(':agentId')
  @NoContent()
  @ApiOperation({ summary: 'Delete an agent; its widget sites are left without an agent, its calls keep their history' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @AgentId() agentId: number): Promise<void> {
    await this.agents.remove(account.id, agentId);
  }
}
