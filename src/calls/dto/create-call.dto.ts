import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsEmail,
  IsInt,
  IsObject,
  IsString,
  Matches,
  Max,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { REPLY_LANGUAGES } from '../../agents/voices';
import { Rfc3339DateTime } from '../../common/date-time';
import { MAX_INT_ID } from '../../common/id.pipes';
import { IsNumberWithDecimals, IsOmittable, IsOneOf, MaxCodePointLength, Trim } from '../../common/validators';
import { ENDED_REASONS, EndedReason, TRANSCRIPT_SPEAKERS, TranscriptSpeaker } from '../call.entity';
import { PHONE_PATTERN } from '../phone';

/** Optional free-text label: trimmed, at most 100 characters, "" when not given. */
const Label = () =>
  applyDecorators(IsOmittable(), Trim(), IsString(), MaxCodePointLength(100), ApiProperty({ type: String, required: false, default: '' }));

export class TranscriptTurnDto {
  /** Who spoke. @example "agent" */
  @IsOneOf(TRANSCRIPT_SPEAKERS)
  speaker: TranscriptSpeaker;

  /** What was said, at most 10,000 characters. @example "नमस्ते! मैं आपकी कैसे मदद कर सकती हूँ?" */
  @IsString()
  @MaxCodePointLength(10_000)
  text: string;
}

/** A caller's or visitor's name: optional, trimmed, at most 200 characters ("" when not given). */
export const CallerName = () => applyDecorators(IsOmittable(), Trim(), IsString(), MaxCodePointLength(200));

/** A caller's or visitor's number: optional, trimmed, at most 50 phone characters ("" when not given). */
export const CallerPhone = () =>
  applyDecorators(
    IsOmittable(),
    Trim(),
    IsString(),
    MaxCodePointLength(50),
    ApiProperty({ type: String, required: false, pattern: PHONE_PATTERN.source, default: '' }),
    Matches(PHONE_PATTERN, { message: 'phone may contain only digits, spaces and + - ( ) . /' }),
  );

/**
 * A call to record (the voice runtime and the widget send these). Every field is optional.
 * `status`, `callStatus`, `sentiment`, `channel` and `callType` are free labels of at most 100 characters;
 * the dashboard and the demo data use the values given in their examples.
 */
export class CreateCallDto {
  /** Caller name, at most 200 characters; "" when unknown. @example "Priya Sharma" */
  @CallerName()
  name?: string = '';

  /** Caller number: digits, spaces and `+ - ( ) . /`, at most 50 characters; "" when unknown. @example "+91-98765-43210" */
  @CallerPhone()
  phone?: string = '';

  /** An email address (at most 254 characters, RFC 5321's limit), or "" when unknown. @example "priya@example.com" */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(254)
  @ValidateIf((_call, value) => value !== '')
  @IsEmail({}, { message: 'email must be an email address or ""' })
  email?: string = '';

  /** Outcome or lead status. Suggested: `new`, `qualified`, `interested`, `not-interested`, `callback`, `converted`. @example "qualified" */
  @Label()
  status?: string = '';

  /** Status of the call itself. Suggested: `completed`, `missed`, `failed`, `busy`, `no-answer`, `voicemail`. @example "completed" */
  @Label()
  callStatus?: string = '';

  /** Suggested: `positive`, `neutral`, `negative`. @example "positive" */
  @Label()
  sentiment?: string = '';

  /** Channel label. Suggested: `phone`, `web-widget`, `whatsapp`. @example "phone" */
  @Label()
  channel?: string = '';

  /** Suggested: `inbound`, `outbound`, `web`. @example "inbound" */
  @Label()
  callType?: string = '';

  /** Site the call came from, at most 2,048 characters. @example "https://shop.example.in/contact" */
  @IsOmittable()
  @Trim()
  @IsString()
  @MaxCodePointLength(2048)
  website?: string = '';

  /** An agent of this account (400 otherwise), or null; the call's `agent` name is taken from it. @example 42 */
  @ValidateIf((_call, value) => value !== undefined && value !== null)
  @ApiProperty({ type: 'integer', required: false, nullable: true, minimum: 1, maximum: MAX_INT_ID })
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  agentId?: number | null;

  /**
   * When the call started: RFC 3339 with an explicit offset (`Z` or `±hh:mm`), to the millisecond (further
   * fraction digits are dropped), in the years 0001–9999 (UTC) that `GET /usage` counts; defaults to now. @example "2026-11-22T09:15:02.123Z"
   */
  @IsOmittable()
  @ApiProperty({ type: String, format: 'date-time', required: false })
  @Rfc3339DateTime()
  callDate?: Date;

  /**
   * Length of the call in seconds, 0 to 86,400, to the millisecond (at most 3 decimals, so that creditsUsed is
   * exactly the contract's formula). @example 95
   */
  @IsOmittable()
  @IsNumberWithDecimals(3)
  @Min(0)
  @Max(86_400)
  durationSeconds?: number = 0;

  /** A supported reply language; defaults to the agent's language ("" without an agent). @example "hi-IN" */
  @IsOmittable()
  @ApiProperty({ enum: REPLY_LANGUAGES, required: false })
  @IsOneOf(REPLY_LANGUAGES)
  replyLanguage?: string;

  /** Any JSON value, or null (the default). @example {"rating": 5, "comment": "Very helpful"} */
  @Allow()
  @ApiProperty({ required: false, nullable: true, default: null, description: 'Any JSON value, or null (the default).' })
  feedback?: unknown = null;

  /** A JSON object of what the agent extracted from the call; defaults to {}. @example {"city": "Pune", "budget": "20 lakh"} */
  @IsOmittable()
  @IsObject()
  extractedData?: Record<string, unknown> = {};

  /** At most 500 turns; defaults to []. */
  @IsOmittable()
  @IsArray()
  @ArrayMaxSize(500)
  @ApiProperty({ type: [TranscriptTurnDto], required: false, maxItems: 500, default: [] })
  @ValidateNested({ each: true })
  @Type(() => TranscriptTurnDto)
  transcript?: TranscriptTurnDto[] = [];

  /** How the call ended (one of the values listed), or "" (the default) when not said. @example "caller-hung-up" */
  @IsOmittable()
  @ApiProperty({ enum: [...ENDED_REASONS, ''], required: false, default: '' })
  @IsOneOf([...ENDED_REASONS, ''])
  endedReason?: EndedReason | '' = '';

  /** A test call from the dashboard's test-call button: readable by id, never listed. @example false */
  @IsOmittable()
  @IsBoolean()
  isTest?: boolean = false;
}
