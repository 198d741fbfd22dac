import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayNotEmpty, ArrayUnique, IsArray, IsString, ValidateBy, ValidateIf } from 'class-validator';
import { Rfc3339DateTime } from '../../common/date-time';
import { CodePointLength, IsOmittable, IsOneOf, Trim } from '../../common/validators';
import { API_KEY_SCOPES, type ApiKeyScope } from '../scopes';

/** A date-time after now (a value that is not a date is left to the date's own rule). */
const IsInTheFuture = () =>
  ValidateBy({
    name: 'isInTheFuture',
    validator: {
      validate: (value) => !(value instanceof Date) || value.getTime() > Date.now(),
      defaultMessage: (args) => `${args?.property ?? 'value'} must be in the future (or null for a key that does not expire)`,
    },
  });

export class CreateApiKeyDto {
  /** What the key is for, so that a person can tell keys apart: 1–100 characters after trimming. @example "Reporting (read only)" */
  @Trim()
  @IsString()
  @CodePointLength(1, 100)
  name: string;

  /**
   * A non-empty subset of `read` (GET) and `write` (everything else), none that the key of the request lacks (403);
   * default: that key's scopes (both, for a key of both). @example ["read"]
   */
  @ApiProperty({ enum: API_KEY_SCOPES, isArray: true, required: false, minItems: 1, maxItems: API_KEY_SCOPES.length, uniqueItems: true })
  @IsOmittable()
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(API_KEY_SCOPES.length)
  @ArrayUnique()
  @IsOneOf(API_KEY_SCOPES, { each: true })
  scopes?: ApiKeyScope[];

  /**
   * When the key stops working (a 401 from then on): RFC 3339 with an offset, in the future; null for a key that
   * does not expire. No later than the key of the request, when that one expires (403); left out, that key's
   * expiry (none, for a key that does not expire). @example "2027-06-30T23:59:59Z"
   */
  @ApiProperty({ type: String, format: 'date-time', required: false, nullable: true })
  @ValidateIf((_object, value) => value !== undefined && value !== null)
  @Rfc3339DateTime()
  @IsInTheFuture()
  expiresAt?: Date | null;
}
