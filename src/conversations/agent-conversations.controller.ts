import { Body, Controller, Post, UseInterceptors } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { Responds } from '../common/responds';
import { ConversationLimitHeaders } from './conversation-limits';
import { ConversationStarts, StartedConversation } from './conversation-starts.service';
import { StartedConversationResponse, toStartedConversationResponse } from './dto/conversation-response.dto';
import { StartConversationDto } from './dto/start-conversation.dto';

const API_START_429 = `Over the rate limit of this account (all its keys together), or too many requests without a valid key from this address;
or the account has as many active conversations as it may (CONVERSATION_MAX_ACTIVE_PER_ACCOUNT); see \`Retry-After\``;

/** The dashboard's test-call button: a conversation with one of the account's agents (API key). */
@ApiTags('conversations')
@UseInterceptors(ConversationLimitHeaders)
@Controller('agents')
export class AgentConversationsController {
  constructor(private readonly starts: ConversationStarts) {}

  @Post(':agentId/conversations')
  @ApiOperation({ summary: 'Start a conversation with an agent (a test conversation unless `test` is false)' })
  @Responds(StartedConversationResponse, toStartedConversationResponse, { status: 201 })
  @ApiErrors(400, 404, 413, 415, [429, API_START_429])
  start(
    @CurrentAccount() account: CallerAccount,
    @IntIdParam('agentId', 'Agent') agentId: number,
    @Body() dto: StartConversationDto,
  ): Promise<StartedConversation> {
    return this.starts.startWithAgent(account.id, agentId, { name: dto.name!, phone: dto.phone! }, dto.test!);
  }
}
