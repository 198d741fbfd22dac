import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { UuidPipe } from '../common/id.pipes';
import { CallsService } from './calls.service';
import { CallListItemResponse, CallResponse, toCallListItemResponse, toCallResponse } from './dto/call-response.dto';
import { CreateCallDto } from './dto/create-call.dto';
import { ListCallsQuery } from './dto/list-calls-query.dto';

const CallId = () => Param('callId', new UuidPipe('Call'));

@ApiTags('calls')
@Controller('calls')
export class CallsController {
  constructor(private readonly calls: CallsService) {}

  @Get()
  @ApiOperation({
    summary: 'List calls, newest first (callDate, then id, descending); never test calls, never transcript or credits',
    description: 'The filters combine. Unknown query parameters are ignored; a bad value of a known one is a 400.',
  })
  @ApiOkResponse({ type: CallListItemResponse, isArray: true })
  @ApiErrors([400, 'Bad query parameter value (with `details`)'])
  async list(@CurrentAccount() account: CallerAccount, @Query() query: ListCallsQuery): Promise<CallListItemResponse[]> {
    return (await this.calls.list(account.id, query)).map(toCallListItemResponse);
  }

  @Post()
  @ApiOperation({ summary: 'Record a call (voice runtime, widget, tests); returns the full call' })
  @ApiCreatedResponse({ type: CallResponse })
  @ApiErrors(400, 413, 415)
  async create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateCallDto): Promise<CallResponse> {
    return toCallResponse(await this.calls.create(account.id, dto));
  }

  @Get(':callId')
  @ApiOperation({ summary: 'Get one call with its transcript and the credits it used (test calls included)' })
  @ApiOkResponse({ type: CallResponse })
  @ApiParam({ name: 'callId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' })
  @ApiErrors(404)
  async get(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<CallResponse> {
    return toCallResponse(await this.calls.getDetail(account.id, callId));
  }
}
