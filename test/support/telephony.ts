import { Writable } from 'node:stream';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { createLogger } from '../../src/common/logger';
import { AppConfig, loadConfig } from '../../src/config/config';
import { createListeningTestContext, TestAccount, TestContext } from '../helpers';
import { FakeAccount, FakeNumber, FakeTwilio } from './fake-twilio';

/**
 * The telephony settings of a service that speaks to the stand-in carrier (`twilio`), with a short deadline for
 * its requests (a carrier that hangs is tested apart); `voice` with a speech-to-text provider configured (none is
 * reached: no media stream connects in these tests), since without one the phone is refused.
 */
export function telephonyOverrides(twilio: FakeTwilio, telephony: Partial<AppConfig['telephony']> = {}): Partial<AppConfig> {
  const base = loadConfig({});
  return {
    telephony: { ...base.telephony, twilioApiBaseUrl: twilio.url, carrierTimeoutMs: 5_000, ...telephony },
    voice: {
      ...base.voice,
      sttProvider: 'openai',
      openAiStt: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-unused', model: 'whisper-1' },
    },
  };
}

/** Settings of a test service; `telephony` is merged into telephonyOverrides' (the others replace the defaults). */
export type TelephonyTestSettings = Partial<Omit<AppConfig, 'telephony'>> & { telephony?: Partial<AppConfig['telephony']> };

/** A service listening on loopback (the carrier posts its webhooks to PUBLIC_BASE_URL) that speaks to `twilio`. */
export async function telephonyContext(
  twilio: FakeTwilio,
  settings: TelephonyTestSettings = {},
  options: { logger?: Logger } = {},
): Promise<{ context: TestContext; baseUrl: string }> {
  const { telephony, ...others } = settings;
  return createListeningTestContext({ ...telephonyOverrides(twilio, telephony), ...others }, options);
}

/** A number connected through the API: the carrier account and number made on the stand-in, and the API's answer. */
export interface ConnectedNumber {
  carrierAccount: FakeAccount;
  carrierNumber: FakeNumber;
  /** The body of the 201. */
  phone: { id: number; number: string; agentId: number | null; inboundUrl: string; statusUrl: string; [field: string]: unknown };
}

/** Makes a carrier account with a number on the stand-in, and connects it with `POST /phone-numbers` (201 checked). */
export async function connectNumber(
  context: TestContext,
  owner: TestAccount,
  twilio: FakeTwilio,
  fields: Record<string, unknown> = {},
): Promise<ConnectedNumber> {
  const carrierAccount = twilio.addAccount();
  const carrierNumber = twilio.addNumber(carrierAccount);
  const response = await context
    .as(owner)
    .post('/phone-numbers')
    .send({
      number: carrierNumber.phoneNumber,
      provider: 'twilio',
      twilioAccountSid: carrierAccount.sid,
      twilioAuthToken: carrierAccount.authToken,
      ...fields,
    });
  if (response.status !== 201) throw new Error(`POST /phone-numbers answered ${response.status}: ${response.text}`);
  return { carrierAccount, carrierNumber, phone: response.body };
}

/** An agent of the account (201 checked). */
export async function createAgent(context: TestContext, owner: TestAccount, body: object = {}): Promise<number> {
  return (await context.as(owner).post('/agents').send(body).expect(201)).body.id as number;
}

/** How many rows the account has in each table telephony writes to (for "nothing was saved"). */
export async function telephonyRows(context: TestContext, accountId: number): Promise<Record<string, number>> {
  const [row] = await context.app.get(DataSource).query(
    `SELECT (SELECT count(*)::int FROM phone_numbers WHERE account_id = $1) AS numbers,
            (SELECT count(*)::int FROM conversations WHERE account_id = $1) AS conversations,
            (SELECT count(*)::int FROM phone_calls WHERE account_id = $1) AS "phoneCalls",
            (SELECT count(*)::int FROM calls WHERE account_id = $1) AS calls`,
    [accountId],
  );
  return row as Record<string, number>;
}

/** A logger at debug level whose lines are kept, to check that a secret is in none of them. */
export function capturedDebugLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ logLevel: 'debug' }, sink), lines };
}
