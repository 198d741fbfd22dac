import { Controller, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { AcceptsUrlEncodedForm } from '../common/json-body.middleware';
import { WritesOwnResponse } from '../common/responds';
import { CarrierRateLimit } from '../rate-limit/carrier-rate-limit';
import { CallProgress } from './call-progress.service';
import { CarrierWebhooks } from './carrier-webhooks.service';
import { CarrierStatusCallbackForm, CarrierVoiceWebhookForm } from './dto/carrier-webhook.dto';
import { InboundCalls } from './inbound-calls.service';

const SIGNATURE_HEADER = {
  name: 'X-Twilio-Signature',
  required: true,
  description:
    "The carrier's signature: base64 HMAC-SHA1, with the number's auth token, of PUBLIC_BASE_URL + the path and the sorted form parameters",
};
const NOT_CARRIER_403 = [403, 'Not signed by the carrier with the auth token of this number (or no such number): nothing is done'] as [
  number,
  string,
];
const FORM_ERRORS = [
  [
    400,
    'A signed request without a `CallSid` (or, for a status, a `CallStatus` the carrier does not send), or a form PostgreSQL cannot store',
  ],
  [413, 'Request body too large (64 KiB)'],
  [415, 'Body is not application/x-www-form-urlencoded, or is compressed'],
] as [number, string][];

/**
 * What the carrier (Twilio) calls: public, signed with the number's auth token (checked first: CarrierWebhooks),
 * form-encoded, rate limited per number and address (CarrierRateLimit).
 */
@ApiTags('telephony (carrier webhooks)')
@Public()
@CarrierRateLimit()
@Controller('telephony/twilio')
export class TwilioWebhooksController {
  constructor(
    private readonly webhooks: CarrierWebhooks,
    private readonly inbound: InboundCalls,
    private readonly progress: CallProgress,
  ) {}

  @Post(':phoneNumberId/incoming')
  @AcceptsUrlEncodedForm()
  @WritesOwnResponse()
  @ApiOperation({
    summary:
      "A call to the number (the carrier's voice URL): TwiML that joins it to the agent's media stream, or says why not and hangs up",
  })
  @ApiHeader(SIGNATURE_HEADER)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: CarrierVoiceWebhookForm })
  @ApiOkResponse({
    description:
      'TwiML: `<Connect><Stream url="wss://…/telephony/twilio/stream">` with a one-time `token` parameter; or `<Say>` one sentence and `<Hangup/>` (no agent, no speech-to-text, the caps)',
    content: { 'text/xml': { schema: { type: 'string' } } },
  })
  @ApiErrors(NOT_CARRIER_403, ...FORM_ERRORS)
  async incoming(@Param('phoneNumberId') phoneNumberId: string, @Req() request: Request, @Res() response: Response): Promise<void> {
    const { number, params } = await this.webhooks.verify(phoneNumberId, request);
    const twiml = await this.inbound.answer(number, params);
    response.status(200).set({ 'Content-Type': 'text/xml; charset=utf-8', 'Cache-Control': 'no-store' }).send(twiml);
  }

  @Post(':phoneNumberId/status')
  @AcceptsUrlEncodedForm()
  @NoContent('Recorded (a status already recorded for the call changes nothing)')
  @ApiOperation({
    summary: "A call's progress (the carrier's status callback): a call never answered becomes a busy, no-answer or failed call",
  })
  @ApiHeader(SIGNATURE_HEADER)
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: CarrierStatusCallbackForm })
  @ApiErrors(NOT_CARRIER_403, ...FORM_ERRORS)
  async status(@Param('phoneNumberId') phoneNumberId: string, @Req() request: Request): Promise<void> {
    const { number, params } = await this.webhooks.verify(phoneNumberId, request);
    await this.progress.report(number, params);
  }
}
