import { Body, Controller, Delete, Get, Patch, Post, UseInterceptors } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { Responds } from '../common/responds';
import { ConversationLimitHeaders } from '../conversations/conversation-limits';
import { CreatePhoneNumberDto } from './dto/create-phone-number.dto';
import { PhoneNumberResponse, toPhoneNumberResponse } from './dto/phone-number-response.dto';
import { PlaceCallDto } from './dto/place-call.dto';
import { PlacedCall, PlacedCallResponse, toPlacedCallResponse } from './dto/placed-call-response.dto';
import { UpdatePhoneNumberDto } from './dto/update-phone-number.dto';
import { OutboundCalls } from './outbound-calls.service';
import { PhoneNumberRow } from './phone-numbers.repository';
import { PhoneNumbersService } from './phone-numbers.service';

const NumberId = () => IntIdParam('phoneNumberId', 'Phone number');
const AGENT_400 = [400, 'Invalid or unknown field, or `agentId` not an agent of this account (with `details`)'] as [number, string];
const CARRIER_422 = [
  422,
  'The carrier refused the credentials (`details` names `twilioAuthToken`), or has no such number on that account (`number`)',
] as [number, string];
const CARRIER_502 = [502, 'The carrier could not be reached or failed; nothing was saved'] as [number, string];

/** The account's phone numbers (contract section 17), and the calls its agents place from them. */
@ApiTags('phone numbers')
@UseInterceptors(ConversationLimitHeaders)
@Controller('phone-numbers')
export class PhoneNumbersController {
  constructor(
    private readonly numbers: PhoneNumbersService,
    private readonly outbound: OutboundCalls,
  ) {}

  @Get()
  @ApiOperation({ summary: "List the account's phone numbers, by id (never their auth tokens)" })
  @Responds([PhoneNumberResponse], toPhoneNumberResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<PhoneNumberRow[]> {
    return this.numbers.list(account.id);
  }

  @Post()
  @ApiOperation({
    summary: "Connect a number of the account's Twilio account: the service checks the credentials and points the number's calls at itself",
  })
  @Responds(PhoneNumberResponse, toPhoneNumberResponse, { status: 201 })
  @ApiErrors(AGENT_400, [409, 'The account has this number already'], 413, 415, CARRIER_422, CARRIER_502)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreatePhoneNumberDto): Promise<PhoneNumberRow> {
    return this.numbers.create(account.id, dto);
  }

  @Get(':phoneNumberId')
  @ApiOperation({ summary: 'Get one phone number' })
  @Responds(PhoneNumberResponse, toPhoneNumberResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @NumberId() phoneNumberId: number): Promise<PhoneNumberRow> {
    return this.numbers.get(account.id, phoneNumberId);
  }

  @Patch(':phoneNumberId')
  @ApiOperation({
    summary:
      "Change some of a number's fields (`agentId: null` detaches its agent); a new number or new credentials are checked with the carrier",
  })
  @Responds(PhoneNumberResponse, toPhoneNumberResponse)
  @ApiErrors(AGENT_400, 404, [409, 'The account has this number already'], 413, 415, CARRIER_422, CARRIER_502)
  update(
    @CurrentAccount() account: CallerAccount,
    @NumberId() phoneNumberId: number,
    @Body() dto: UpdatePhoneNumberDto,
  ): Promise<PhoneNumberRow> {
    return this.numbers.update(account.id, phoneNumberId, dto);
  }

  @Delete(':phoneNumberId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a phone number; calls that arrive for it afterwards are refused like an unknown number' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @NumberId() phoneNumberId: number): Promise<void> {
    await this.numbers.remove(account.id, phoneNumberId);
  }

  @Post(':phoneNumberId/calls')
  @ApiOperation({
    summary:
      'Place a call from the number: the agent speaks once the callee answers; the call is listed when it ends (busy and unanswered calls too)',
  })
  @Responds(PlacedCallResponse, toPlacedCallResponse, { status: 201 })
  @ApiErrors(
    AGENT_400,
    404,
    [409, 'The number has no agent and no `agentId` was given'],
    413,
    415,
    [422, 'The carrier refused the call (its message), or the credentials (`details` names `twilioAuthToken`)'],
    [
      429,
      'Over the rate limit of this account, or as many phone calls in progress as PHONE_MAX_ACTIVE_CALLS (or conversations as CONVERSATION_MAX_ACTIVE_PER_ACCOUNT); see `Retry-After`',
    ],
    CARRIER_502,
    [503, 'No speech-to-text is configured (STT_PROVIDER=none): nobody could hear the callee; or the database is unavailable'],
  )
  place(@CurrentAccount() account: CallerAccount, @NumberId() phoneNumberId: number, @Body() dto: PlaceCallDto): Promise<PlacedCall> {
    return this.outbound.place(account.id, phoneNumberId, dto);
  }
}
