import { ApiProperty } from '@nestjs/swagger';
import { CALL_STATUSES } from '../twilio-params';

/**
 * The form parameters of the carrier's voice webhook (Twilio's; it sends more, all signed, which are accepted).
 * Documentation only: the body is read as a form and checked against `X-Twilio-Signature` before anything else.
 */
export class CarrierVoiceWebhookForm {
  /** The carrier's id of the call. @example "CA0123456789abcdef0123456789abcdef" */
  CallSid: string;
  /** The carrier account: the number's `twilioAccountSid`. @example "AC0123456789abcdef0123456789abcdef" */
  AccountSid: string;
  /** The caller (inbound) or the number (outbound). @example "+919876543210" */
  From: string;
  /** The number (inbound) or the callee (outbound). @example "+14155550100" */
  To: string;
  @ApiProperty({ enum: CALL_STATUSES, example: 'ringing' })
  CallStatus: string;
  /** `inbound`, `outbound-api` or `outbound-dial`. @example "inbound" */
  Direction: string;
}

/** The form parameters of a status callback (Twilio's; the others it sends are accepted). */
export class CarrierStatusCallbackForm extends CarrierVoiceWebhookForm {
  /** Seconds the call lasted, on `completed`. @example "42" */
  @ApiProperty({ required: false })
  CallDuration?: string;
  /** Which progress event this is, from 0. @example "2" */
  @ApiProperty({ required: false })
  SequenceNumber?: string;
}
