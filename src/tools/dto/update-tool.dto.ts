import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsObject, IsString, Matches, Max, Min } from 'class-validator';
import { CodePointLength, IsOmittable, MaxCodePointLength, Trim } from '../../common/validators';
import { WebhookUrlRules } from '../../webhooks/dto/update-webhook.dto';
import {
  MAX_DESCRIPTION_LENGTH,
  MAX_SPEAK_WHILE_RUNNING_LENGTH,
  MAX_TIMEOUT_SECONDS,
  MIN_TIMEOUT_SECONDS,
  TOOL_NAME_PATTERN,
  TRANSFER_NUMBER_PATTERN,
} from '../tool-rules';

/**
 * Any subset of a tool's fields; absent fields are left as they are. The rules apply on create too. A field its
 * type does not take (`url` on an end_call tool) is a 400 naming it; the type itself cannot change.
 */
export class UpdateToolDto {
  /**
   * The function name the model calls: letters, digits, `_` and `-`, 1–64 characters; unique within the account
   * (409 otherwise). @example "book_table"
   */
  @IsOmittable()
  @ApiProperty({ pattern: TOOL_NAME_PATTERN.source, minLength: 1, maxLength: 64, required: false })
  @IsString()
  @Matches(TOOL_NAME_PATTERN, { message: 'name must be 1–64 letters, digits, `_` or `-`' })
  name?: string;

  /** What the tool does and when to use it, for the model: 1–1,000 characters after trimming. @example "Books a table at the restaurant." */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, MAX_DESCRIPTION_LENGTH)
  description?: string;

  /**
   * webhook: the JSON Schema of the arguments, an object schema as a Chat Completions `function` takes it (draft-07,
   * or 2020-12 when `$schema` says so), at most 16 KiB as compact JSON; the model's arguments are checked against it
   * before a request is sent. `pattern` runs on RE2 (no lookaround or backreferences); `format` is not checked;
   * `$ref` only within the schema. Default: no arguments.
   * @example {"type": "object", "properties": {"people": {"type": "integer", "minimum": 1}, "time": {"type": "string"}}, "required": ["people", "time"]}
   */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'object', additionalProperties: true })
  @IsObject()
  parameters?: Record<string, unknown>;

  /**
   * webhook: where the tool's requests are POSTed, under a webhook's rules: an https URL of a public address, at most
   * 2,000 characters as stored, without credentials (http and private addresses only with
   * WEBHOOK_ALLOW_PRIVATE_TARGETS=true). @example "https://bookings.example.com/tools/book-table"
   */
  @IsOmittable()
  @WebhookUrlRules(false)
  url?: string;

  /** webhook: the longest the tool may take to answer, 1–60 seconds (default 10). @example 10 */
  @IsOmittable()
  @ApiProperty({ type: 'integer', minimum: MIN_TIMEOUT_SECONDS, maximum: MAX_TIMEOUT_SECONDS, required: false })
  @IsInt()
  @Min(MIN_TIMEOUT_SECONDS)
  @Max(MAX_TIMEOUT_SECONDS)
  timeoutSeconds?: number;

  /** webhook: what the agent says in a spoken conversation while the tool runs, at most 200 characters (default ""). @example "One moment, let me check." */
  @IsOmittable()
  @IsString()
  @MaxCodePointLength(MAX_SPEAK_WHILE_RUNNING_LENGTH)
  speakWhileRunning?: string;

  /** transfer_call: where a phone call is transferred, E.164 (`+` and 8–15 digits). @example "+919876543210" */
  @IsOmittable()
  @ApiProperty({ pattern: TRANSFER_NUMBER_PATTERN.source, required: false })
  @IsString()
  @Matches(TRANSFER_NUMBER_PATTERN, { message: 'number must be E.164: + and 8–15 digits' })
  number?: string;
}
