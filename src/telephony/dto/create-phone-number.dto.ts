import { IsDefined } from 'class-validator';
import { IsOmittable, IsOneOf } from '../../common/validators';
import { PHONE_PROVIDERS, PhoneProvider } from '../phone-number.entity';
import { AccountSid, AuthToken, E164Number, PhoneNumberSettingsDto } from './phone-number-settings.dto';

/**
 * A number of the account's Twilio account: `number` and the credentials are required (the carrier is asked
 * before anything is saved); the other fields take these defaults.
 */
export class CreatePhoneNumberDto extends PhoneNumberSettingsDto {
  /** The number in E.164, as the carrier account has it; unique within the account. */
  @IsDefined({ message: 'number is required' })
  @E164Number('number', '+14155550100', true)
  number: string;

  /** The carrier; only `twilio` (or a carrier that speaks its API, TWILIO_API_BASE_URL). @example "twilio" */
  @IsOmittable()
  @IsOneOf(PHONE_PROVIDERS)
  provider?: PhoneProvider = 'twilio';

  /** The Twilio account that has the number. */
  @IsDefined({ message: 'twilioAccountSid is required' })
  @AccountSid(true)
  twilioAccountSid: string;

  /** That account's auth token: stored encrypted, never returned. */
  @IsDefined({ message: 'twilioAuthToken is required' })
  @AuthToken(true)
  twilioAuthToken: string;

  agentId?: number | null = null;

  label?: string = '';

  greeting?: string = '';
}
