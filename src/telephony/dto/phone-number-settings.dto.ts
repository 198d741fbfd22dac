import { AgentVersionPin } from '../../agent-versions/version-pin';
import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsString, Matches, Max, Min, ValidateIf } from 'class-validator';
import { MAX_INT_ID } from '../../common/id.pipes';
import { IsOmittable, MaxCodePointLength, Trim } from '../../common/validators';

/** E.164: `+`, then 8 to 15 digits, the first not 0. */
export const E164 = /^\+[1-9][0-9]{7,14}$/;
/** A Twilio account SID: `AC` and 32 hexadecimal digits. */
export const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/;
/** An auth token: 1–128 printable ASCII characters, no spaces (Twilio's are 32 hexadecimal digits). */
export const AUTH_TOKEN = /^[\x21-\x7e]{1,128}$/;

/** A phone number in E.164 (`required`: on create), documented with its pattern. */
export const E164Number = (field: string, example: string, required: boolean) =>
  applyDecorators(
    ApiProperty({ type: String, pattern: E164.source, example, required }),
    IsString(),
    Matches(E164, { message: `${field} must be in E.164 form: + and 8 to 15 digits, the first not 0 (such as ${example})` }),
  );

/** The carrier account's SID (`AC…`). */
export const AccountSid = (required: boolean) =>
  applyDecorators(
    ApiProperty({ type: String, pattern: ACCOUNT_SID.source, example: 'AC0123456789abcdef0123456789abcdef', required }),
    IsString(),
    Matches(ACCOUNT_SID, { message: 'twilioAccountSid must be a Twilio account SID: AC and 32 hexadecimal digits' }),
  );

/** The carrier account's auth token: write-only (never returned, never logged). */
export const AuthToken = (required: boolean) =>
  applyDecorators(
    ApiProperty({ type: String, writeOnly: true, pattern: AUTH_TOKEN.source, example: '0123456789abcdef0123456789abcdef', required }),
    IsString(),
    Matches(AUTH_TOKEN, { message: 'twilioAuthToken must be 1-128 printable ASCII characters without spaces' }),
  );

/** An agent of this account (400 otherwise), or null for none. */
export const NumberAgentId = () =>
  applyDecorators(
    ValidateIf((_object, value) => value !== undefined && value !== null),
    ApiProperty({ type: 'integer', required: false, nullable: true, minimum: 1, maximum: MAX_INT_ID, example: 12 }),
    IsInt(),
    Min(1),
    Max(MAX_INT_ID),
  );

/** The settings of a number that never reach the carrier: the same rules on create and on PATCH. */
export class PhoneNumberSettingsDto {
  /** The agent of this account that answers the number (and places its calls by default), or null for none. */
  @NumberAgentId()
  agentId?: number | null;

  @AgentVersionPin()
  agentVersion?: number | null;

  /** A name for the number, at most 200 characters after trimming. @example "Front desk" */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(200)
  label?: string;

  /**
   * The agent's first sentence on an inbound call, at most 500 characters after trimming; "" for none (the agent
   * waits for the caller). @example "Namaste, how can I help?"
   */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(500)
  greeting?: string;
}
