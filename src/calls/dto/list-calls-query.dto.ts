import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { MAX_INT_ID } from '../../common/id.pipes';
import { ToInteger } from '../../common/query-params';
import { IsOmittable, Trim } from '../../common/validators';
import { IsStorable } from '../../common/storable-text';

/** An optional text filter: trimmed, storable, at most `maxLength` characters; blank means no filter. */
const QueryText = (maxLength: number) =>
  applyDecorators(IsOmittable(), ApiPropertyOptional({ maxLength }), Trim(), IsString(), IsStorable(), MaxLength(maxLength));

/** Query parameters of `GET /calls`; they combine (AND). Unknown parameters are ignored. */
export class ListCallsQuery {
  /** Maximum number of calls returned, 1–1000. @example 50 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit: number = 200;

  /**
   * Case-insensitive substring of the caller's name or phone number (`%`, `_` and `\` are literal). A search
   * made of digits and phone punctuation also matches the number with its punctuation ignored
   * (`98765 43` finds `+91-98765-43210`). At most 200 characters; blank means no search.
   * @example "priya"
   */
  @QueryText(200)
  search: string = '';

  /** The call's `status`, case-insensitive; blank means any. @example "qualified" */
  @QueryText(100)
  status: string = '';

  /** Only calls whose `callDate` is within the last N × 24 hours, 0–3650; 0 means all history. @example 30 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(0)
  @Max(3650)
  days: number = 0;

  /** The call's `callStatus`, case-insensitive; blank means any. @example "completed" */
  @QueryText(100)
  callStatus: string = '';

  /** Only calls handled by this agent (including since-deleted agents). @example 42 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  agentId?: number;
}
