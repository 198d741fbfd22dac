import { ForbiddenException, Injectable } from '@nestjs/common';
import type { FormParams } from '../common/form-body';
import { MAX_INT_ID } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
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

/** One answer for every request the carrier did not sign for a number of this service: nothing tells them apart. */
const notFromCarrier = () =>
  new ForbiddenException('Not a request of the carrier for a phone number of this service (X-Twilio-Signature is missing or wrong)');

/**
 * The check of every carrier webhook, before anything else is done for it: the number its path names exists, and
 * the request is signed with that number's auth token over PUBLIC_BASE_URL + its path and query and its form
 * (twilio-signature.ts), for that number's carrier account (`AccountSid`) and that number (`To` or `From`: a
 * number changed since no longer answers for the old one). Anything else is a 403 (CarrierRateLimit counts them).
 */
@Injectable()
export class CarrierWebhooks {
  private readonly publicBaseUrl: string;

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
    if (typeof signature !== 'string' || !(id <= MAX_INT_ID)) throw notFromCarrier();
    const number = await this.numbers.findForWebhook(id);
    const authToken = number && this.box.open(number.accountId, number.twilioAuthTokenSealed);
    const params = isForm(request.body) ? request.body : (Object.create(null) as FormParams);
    if (!number || !authToken || !isSignedByCarrier(authToken, signature, `${this.publicBaseUrl}${request.originalUrl}`, params)) {
      throw notFromCarrier();
    }
    const [to, from] = [single(params, 'To'), single(params, 'From')];
    if (single(params, 'AccountSid') !== number.twilioAccountSid || (to !== number.number && from !== number.number))
      throw notFromCarrier();
    return { number, params };
  }
}

/** The body as readFormBody leaves it (an object without a prototype); anything else (no body) is no form. */
const isForm = (body: unknown): body is FormParams => typeof body === 'object' && body !== null && Object.getPrototypeOf(body) === null;
