import { IsOmittable } from '../../common/validators';
import { AccountSid, AuthToken, E164Number, PhoneNumberSettingsDto } from './phone-number-settings.dto';

/**
 * Any subset of the number's fields; absent fields are left as they are (`agentId: null` detaches the agent). A
 * change of `number` or of the credentials asks the carrier again, and nothing changes when it refuses.
 */
export class UpdatePhoneNumberDto extends PhoneNumberSettingsDto {
  /** Another number of the carrier account, in E.164. */
  @IsOmittable()
  @E164Number('number', '+14155550101', false)
  number?: string;

  /** Another Twilio account (its auth token too, unless the same token opens it). */
  @IsOmittable()
  @AccountSid(false)
  twilioAccountSid?: string;

  /** A new auth token: stored encrypted, never returned. */
  @IsOmittable()
  @AuthToken(false)
  twilioAuthToken?: string;
}
