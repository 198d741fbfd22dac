import { BadRequestException } from '@nestjs/common';
import { PHONE_PATTERN } from '../calls/phone';
import type { FormParams } from '../common/form-body';

/** Every status the carrier reports a call in (Twilio's CallStatus). */
export const CALL_STATUSES = [
  'queued',
  'initiated',
  'ringing',
  'in-progress',
  'completed',
  'busy',
  'no-answer',
  'failed',
  'canceled',
] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

const CALL_SID = /^CA[0-9a-fA-F]{32}$/;
/** The longest `phone` a call keeps (the column's). */
const MAX_PHONE_LENGTH = 50;

/** A parameter given once; undefined when absent or repeated (the carrier sends each of these once). */
export const single = (params: FormParams, name: string): string | undefined => {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
};

/** The call's `CallSid` (`CA…`); a 400 when the carrier's request has none. */
export function callSidOf(params: FormParams): string {
  const callSid = single(params, 'CallSid');
  if (callSid === undefined || !CALL_SID.test(callSid)) throw new BadRequestException('CallSid is missing or is not a call id (CA…)');
  return callSid;
}

/** The reported status; a 400 for one the carrier does not send. */
export function callStatusOf(params: FormParams): CallStatus {
  const status = single(params, 'CallStatus');
  if (!(CALL_STATUSES as readonly string[]).includes(status ?? ''))
    throw new BadRequestException(`CallStatus must be one of: ${CALL_STATUSES.join(', ')}`);
  return status as CallStatus;
}

/** `CallDuration` in whole seconds; null when absent or not a number. */
export function callDurationOf(params: FormParams): number | null {
  const duration = single(params, 'CallDuration');
  return duration !== undefined && /^\d{1,9}$/.test(duration) ? Number(duration) : null;
}

/**
 * The other party's number as a call keeps it: `From` as given when it is a phone number, "" otherwise (a
 * withheld number is `anonymous`, a browser or SIP caller `client:…` or `sip:…`).
 */
export function callerPhone(value: string | undefined): string {
  return value !== undefined && value.length <= MAX_PHONE_LENGTH && PHONE_PATTERN.test(value) && /[0-9]/.test(value) ? value : '';
}
