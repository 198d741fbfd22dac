import { BadGatewayException, UnprocessableEntityException } from '@nestjs/common';
import { UnprocessableFieldsException } from '../common/validation';
import { CarrierRefusal, CarrierUnavailable } from './twilio-rest';

/** The carrier could not be reached or failed: a 502, and nothing was saved. */
export const carrierUnavailable = () =>
  new BadGatewayException('The carrier could not be reached or failed to answer; nothing was saved: try again');

/** The carrier refuses the credentials: a 422 naming the auth token (with the SID, the pair the carrier refused). */
export const credentialsRefused = () =>
  new UnprocessableFieldsException([
    {
      field: 'twilioAuthToken',
      message: 'The carrier refused these credentials: twilioAuthToken must be the auth token of the Twilio account twilioAccountSid',
    },
  ]);

/**
 * What the API answers for a carrier's failure while a number is checked or pointed at the service: refused
 * credentials a 422 naming `twilioAuthToken`, anything else a 502 (the carrier failed or refused a request the
 * service made right). Other errors are left as they are.
 */
export function numberSetupFailure(error: unknown): unknown {
  if (error instanceof CarrierRefusal) return error.refusesCredentials ? credentialsRefused() : carrierUnavailable();
  if (error instanceof CarrierUnavailable) return carrierUnavailable();
  return error;
}

/** What the API answers when the carrier does not place a call: its refusal a 422 with its message, anything else a 502. */
export function placementFailure(error: unknown): unknown {
  if (error instanceof CarrierRefusal) {
    if (error.refusesCredentials) return credentialsRefused();
    return new UnprocessableEntityException(`The carrier refused the call: ${error.carrierMessage}`);
  }
  if (error instanceof CarrierUnavailable) return carrierUnavailable();
  return error;
}
