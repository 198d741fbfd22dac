import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { OutboundError, outboundRequest, PinnedAgents } from '../outbound/outbound-http';

/** A carrier account's credentials: the account SID and its auth token (HTTP Basic). */
export interface CarrierCredentials {
  accountSid: string;
  authToken: string;
}

/** The carrier answered 4xx: it refuses the request (its `code` and `message`, Twilio's error JSON). */
export class CarrierRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: number | undefined,
    readonly carrierMessage: string,
  ) {
    super(`the carrier refused the request (${status})`);
    this.name = 'CarrierRefusal';
  }

  /** The credentials were refused (Twilio: 401, code 20003 "Authenticate"; 403 for an account that is not active). */
  get refusesCredentials(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** The carrier could not be reached, did not answer in time, failed (5xx) or answered what it should not. */
export class CarrierUnavailable extends Error {
  constructor(readonly reason: string) {
    super(`the carrier is unavailable: ${reason}`);
    this.name = 'CarrierUnavailable';
  }
}

/** What is placed: a call from one of the account's numbers, running `twiml` once answered. */
export interface CallRequest {
  to: string;
  from: string;
  twiml: string;
  statusCallback: string;
}

const API_VERSION = '2010-04-01';
/** How long the carrier lets the callee's phone ring (seconds), the contract's. */
export const RING_TIMEOUT_SECONDS = 30;
/** The progress events of a placed call that the status callback is told about. */
export const STATUS_CALLBACK_EVENTS = ['initiated', 'ringing', 'answered', 'completed'] as const;
/** Larger than any answer of the endpoints used here (a page of one number, a call). */
const MAX_ANSWER_BYTES = 1024 * 1024;
const NUMBER_SID = /^PN[0-9a-fA-F]{32}$/;
const CALL_SID = /^CA[0-9a-fA-F]{32}$/;
/** The carrier's message, as much of it as is shown (the 422's message carries it). */
const MAX_MESSAGE_LENGTH = 300;

/**
 * Twilio's REST API (TWILIO_API_BASE_URL), the few requests the service makes: find a number of the carrier
 * account and point it at the service, place a call, end one. Through the outbound client (src/outbound) with
 * one deadline per request (TWILIO_TIMEOUT_MS) and a bounded answer. The address is the operator's, not a
 * customer's: private addresses are allowed (a carrier, or a stand-in, on the operator's network), metadata
 * addresses never. The auth token travels only in the Authorization header of these requests.
 */
@Injectable()
export class TwilioRest implements OnApplicationShutdown {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly agents = new PinnedAgents({ maxAgents: 8 });

  constructor(@InjectConfig() config: AppConfig) {
    this.baseUrl = config.telephony.twilioApiBaseUrl;
    this.timeoutMs = config.telephony.carrierTimeoutMs;
  }

  /** The carrier's id (`PN…`) of `number` on the carrier account; undefined when the account has no such number. */
  async findNumber(credentials: CarrierCredentials, number: string): Promise<string | undefined> {
    const query = new URLSearchParams({ PhoneNumber: number });
    const page = await this.send(credentials, 'GET', `IncomingPhoneNumbers.json?${query.toString()}`);
    const numbers = (page as { incoming_phone_numbers?: unknown }).incoming_phone_numbers;
    if (!Array.isArray(numbers)) throw new CarrierUnavailable('an unexpected answer to a number lookup');
    const found = (numbers as { sid?: unknown; phone_number?: unknown }[]).find((entry) => entry?.phone_number === number);
    if (found === undefined) return undefined;
    if (typeof found.sid !== 'string' || !NUMBER_SID.test(found.sid))
      throw new CarrierUnavailable('an unexpected answer to a number lookup');
    return found.sid;
  }

  /** Points the number's calls at the service: its voice URL (POST) and its status callback. */
  async pointNumber(credentials: CarrierCredentials, numberSid: string, urls: { voiceUrl: string; statusCallback: string }): Promise<void> {
    const form = new URLSearchParams({
      VoiceUrl: urls.voiceUrl,
      VoiceMethod: 'POST',
      StatusCallback: urls.statusCallback,
      StatusCallbackMethod: 'POST',
    });
    await this.send(credentials, 'POST', `IncomingPhoneNumbers/${numberSid}.json`, form);
  }

  /** Places a call; the carrier's id of it (`CA…`), which its status callbacks carry. */
  async placeCall(credentials: CarrierCredentials, call: CallRequest): Promise<string> {
    const form = new URLSearchParams({
      To: call.to,
      From: call.from,
      Twiml: call.twiml,
      StatusCallback: call.statusCallback,
      StatusCallbackMethod: 'POST',
      Timeout: String(RING_TIMEOUT_SECONDS),
    });
    for (const event of STATUS_CALLBACK_EVENTS) form.append('StatusCallbackEvent', event); // repeated, as Twilio takes a list
    const answer = (await this.send(credentials, 'POST', 'Calls.json', form)) as { sid?: unknown };
    if (typeof answer.sid !== 'string' || !CALL_SID.test(answer.sid)) throw new CarrierUnavailable('an unexpected answer to a call');
    return answer.sid;
  }

  /** Ends a call in progress (`Status=completed`): the carrier hangs up. */
  async endCall(credentials: CarrierCredentials, callSid: string): Promise<void> {
    if (!CALL_SID.test(callSid)) throw new CarrierUnavailable('not a call id');
    await this.send(credentials, 'POST', `Calls/${callSid}.json`, new URLSearchParams({ Status: 'completed' }));
  }

  /** Gives a call in progress new TwiML (`Twiml`): the carrier leaves the media stream (its `stop`) and runs it. */
  async redirectCall(credentials: CarrierCredentials, callSid: string, twiml: string): Promise<void> {
    if (!CALL_SID.test(callSid)) throw new CarrierUnavailable('not a call id');
    await this.send(credentials, 'POST', `Calls/${callSid}.json`, new URLSearchParams({ Twiml: twiml }));
  }

  onApplicationShutdown(): void {
    this.agents.destroy();
  }

  /** One request to the account's part of the API; its JSON answer (2xx), a CarrierRefusal (4xx) or CarrierUnavailable. */
  private async send(credentials: CarrierCredentials, method: 'GET' | 'POST', path: string, form?: URLSearchParams): Promise<object> {
    const basic = Buffer.from(`${credentials.accountSid}:${credentials.authToken}`).toString('base64');
    const headers: Record<string, string> = { authorization: `Basic ${basic}`, accept: 'application/json' };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    let status: number;
    let body: Buffer;
    try {
      ({ status, body } = await outboundRequest(`${this.baseUrl}/${API_VERSION}/Accounts/${credentials.accountSid}/${path}`, {
        method,
        headers,
        body: form?.toString(),
        policy: { allowPrivateAddresses: true },
        timeoutMs: this.timeoutMs,
        maxBodyBytes: MAX_ANSWER_BYTES,
        agents: this.agents,
      }));
    } catch (error) {
      if (error instanceof OutboundError) throw new CarrierUnavailable(error.message);
      throw error;
    }
    const json = parseJson(body);
    if (status >= 200 && status < 300) {
      if (json === undefined) throw new CarrierUnavailable('an answer that is not JSON');
      return json;
    }
    if (status >= 400 && status < 500) {
      const { code, message } = (json ?? {}) as { code?: unknown; message?: unknown };
      throw new CarrierRefusal(status, typeof code === 'number' ? code : undefined, carrierText(message, status));
    }
    throw new CarrierUnavailable(`status ${status}`);
  }
}

function parseJson(body: Buffer): object | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return value !== null && typeof value === 'object' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The carrier's message as it may be shown to the customer: printable, bounded. */
function carrierText(message: unknown, status: number): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this removes
  const text = typeof message === 'string' ? message.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim() : '';
  if (!text) return `status ${status}`;
  return [...text].length > MAX_MESSAGE_LENGTH ? `${[...text].slice(0, MAX_MESSAGE_LENGTH).join('')}…` : text;
}
