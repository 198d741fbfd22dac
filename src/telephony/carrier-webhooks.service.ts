import { ForbiddenException, Injectable, Logger } from '@nestjs/common';
import type { FormParams } from '../common/form-body';
import { MAX_INT_ID } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { UnknownCarrierCredential } from '../rate-limit/carrier-rate-limit';
import { AuthTokenBox } from './auth-token-box';
import { PhoneNumbersRepository, WebhookNumberRow } from './phone-numbers.repository';
import { single } from './twilio-params';
import { isSignedByCarrier } from './twilio-signature';

/** What the carrier's webhook carries once read: its path and query, its signature header and its form. */
export interface CarrierRequest {
  originalUrl: string;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

const INT_ID = /^[1-9][0-9]{0,9}$/;

const NOT_FROM_CARRIER = 'Not a request of the carrier for a phone number of this service (X-Twilio-Signature is missing or wrong)';
/**
 * One answer for every request the carrier did not sign for a number of this service, nothing tells them apart;
 * one that names no number or has no signature counts against its address (UnknownCarrierCredential).
 */
const notFromCarrier = (namesNoNumber: boolean) =>
  namesNoNumber ? new UnknownCarrierCredential(NOT_FROM_CARRIER) : new ForbiddenException(NOT_FROM_CARRIER);

/**
 * The check of every carrier webhook, before anything else is done for it: the number its path names exists, and
 * the request is signed with that number's auth token over PUBLIC_BASE_URL + its path and query and its form
 * (twilio-signature.ts), for that number's carrier account (`AccountSid`) and that number (`To` or `From`: a
 * number changed since no longer answers for the old one). Anything else is a 403 (CarrierRateLimit counts those that
 * name no number).
 */
@Injectable()
export class CarrierWebhooks {
  private readonly publicBaseUrl: string;
  private readonly logger = new Logger(CarrierWebhooks.name);

  constructor(
    private readonly numbers: PhoneNumbersRepository,
    private readonly box: AuthTokenBox,
    @InjectConfig() config: AppConfig,
  ) {
    this.publicBaseUrl = config.publicBaseUrl;
  }

  /** The number of a request the carrier signed, and the request's form; a 403 otherwise. */
  async verify(phoneNumberId: string, request: CarrierRequest): Promise<{ number: WebhookNumberRow; params: FormParams }> {
    const signature = request.headers['x-twilio-signature'];
    const id = INT_ID.test(phoneNumberId) ? Number(phoneNumberId) : NaN;
    if (typeof signature !== 'string' || !(id <= MAX_INT_ID)) throw notFromCarrier(true);
    const number = await this.numbers.findForWebhook(id);
    if (!number) throw notFromCarrier(true);
    const authToken = this.box.open(number.accountId, number.twilioAuthTokenSealed);
    const params = isForm(request.body) ? request.body : (Object.create(null) as FormParams);
    if (!authToken || !isSignedByCarrier(authToken, signature, `${this.publicBaseUrl}${request.originalUrl}`, params)) {
      // The carrier's own requests fail here when the number's token changed on one side only (or TELEPHONY_SECRET did).
      this.logger.warn({ phoneNumberId: id }, 'A carrier webhook failed the signature check of its phone number');
      throw notFromCarrier(false);
    }
    const [to, from] = [single(params, 'To'), single(params, 'From')];
    if (single(params, 'AccountSid') !== number.twilioAccountSid || (to !== number.number && from !== number.number))
      throw notFromCarrier(false);
    return { number, params };
  }
}

/** The body as readFormBody leaves it (an object without a prototype); anything else (no body) is no form. */
const isForm = (body: unknown): body is FormParams => typeof body === 'object' && body !== null && Object.getPrototypeOf(body) === null;
