import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { UuidPipe } from '../common/id.pipes';
import { Serialize } from '../common/serialize';
import { Call } from './call.entity';
import { CallsService } from './calls.service';
import { CallDetail, CallListItemResponse, CallResponse, toCallListItemResponse, toCallResponse } from './dto/call-response.dto';
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
  @Serialize(CallListItemResponse, toCallListItemResponse, { isArray: true })
  @ApiErrors([400, 'Bad query parameter value (with `details`)'])
  list(@CurrentAccount() account: CallerAccount, @Query() query: ListCallsQuery): Promise<Call[]> {
    return this.calls.list(account.id, query);
  }

  @Post()
  @ApiOperation({ summary: 'Record a call (voice runtime, widget, tests); returns the full call' })
  @Serialize(CallResponse, toCallResponse, { status: 201 })
  @ApiErrors(400, 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateCallDto): Promise<CallDetail> {
    return this.calls.create(account.id, dto);
  }

  @Get(':callId')
  @ApiOperation({ summary: 'Get one call with its transcript and the credits it used (test calls included)' })
  @Serialize(CallResponse, toCallResponse)
  @ApiParam({ name: 'callId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' })
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<CallDetail> {
    return this.calls.getDetail(account.id, callId);
  }
}
