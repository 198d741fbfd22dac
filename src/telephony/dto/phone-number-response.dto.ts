import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import type { ResponseContext } from '../../common/responds';
import { PHONE_PROVIDERS, PhoneProvider } from '../phone-number.entity';
import { PhoneNumberRow } from '../phone-numbers.repository';
import { webhookUrlsOf } from '../twiml';

/** A phone number of the account. Never its auth token. */
export class PhoneNumberResponse {
  /** @example 3 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** E.164. @example "+14155550100" */
  number: string;
  @ApiProperty({ enum: PHONE_PROVIDERS, example: 'twilio' })
  provider: PhoneProvider;
  /** The agent that answers it; null when none (or after that agent was deleted). @example 12 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentId: number | null;
  /** The version of the agent the number's calls run; null: its latest published version. @example 3 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentVersion: number | null;
  /** @example "Front desk" */
  label: string;
  /** The agent's first sentence on an inbound call; "" for none. @example "Namaste, how can I help?" */
  greeting: string;
  /** @example "AC0123456789abcdef0123456789abcdef" */
  twilioAccountSid: string;
  /** Where the carrier sends the number's calls (set on the number by the service). @example "https://api.example.com/telephony/twilio/3/incoming" */
  inboundUrl: string;
  /** Where the carrier reports the calls' progress (set on the number by the service). @example "https://api.example.com/telephony/twilio/3/status" */
  statusUrl: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

export function toPhoneNumberResponse(phone: PhoneNumberRow, { publicBaseUrl }: ResponseContext): PhoneNumberResponse {
  const { inboundUrl, statusUrl } = webhookUrlsOf(publicBaseUrl, phone.id);
  return {
    id: phone.id,
    number: phone.number,
    provider: phone.provider,
    agentId: phone.agentId,
    agentVersion: phone.agentVersion,
    label: phone.label,
    greeting: phone.greeting,
    twilioAccountSid: phone.twilioAccountSid,
    inboundUrl,
    statusUrl,
    createdAt: phone.createdAt.toISOString(),
    updatedAt: phone.updatedAt.toISOString(),
  };
}
