import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Max, Min, ValidateBy } from 'class-validator';
import { MAX_INT_ID } from '../../common/id.pipes';
import { ToInteger } from '../../common/query-params';
import { IsOmittable, IsOneOf, MaxCodePointLength, Trim } from '../../common/validators';
import { IsStorable } from '../../common/storable-text';
import { EXPORT_FORMATS, ExportFormat } from '../calls-export';
import { decodeListCursor } from '../list-cursor';

/** A well-formed cursor, exactly as this service writes them (list-cursor.ts; not signed); anything else is a 400. */
const IsListCursor = () =>
  ValidateBy({
    name: 'isListCursor',
    validator: {
      validate: (value) => typeof value === 'string' && decodeListCursor(value) !== undefined,
      defaultMessage: () => 'before must be a cursor from a Link header of GET /calls',
    },
  });

/** An optional text filter: trimmed, storable, at most `maxLength` characters; blank means no filter. */
const QueryText = (maxLength: number) =>
  applyDecorators(IsOmittable(), ApiPropertyOptional(), Trim(), IsString(), IsStorable(), MaxCodePointLength(maxLength));

/** The filters of `GET /calls` and `GET /calls/export`; they combine (AND). Unknown parameters are ignored. */
export class CallFiltersQuery {
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

  /**
   * Only calls whose `callDate` is within the last N × 24 hours (counted at each request, also when paging),
   * 0–3650; 0 means all history. @example 30
   */
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
  @ApiPropertyOptional({ type: 'integer', maximum: MAX_INT_ID })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  agentId?: number;
}

/** Query parameters of `GET /calls`: the filters, the page size and the paging cursor. */
export class ListCallsQuery extends CallFiltersQuery {
  /** Maximum number of calls returned, 1–1000. @example 50 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(1000)
  limit: number = 200;

  /**
   * Where the page starts: only calls after this one in the list's order. Opaque: take it from the
   * `Link: <…>; rel="next"` header of the previous page, never build it. A malformed cursor is a 400.
   */
  @IsOmittable()
  @ApiPropertyOptional({ maxLength: 200 })
  @IsString()
  @IsListCursor()
  before?: string;
}

/** Query parameters of `GET /calls/export`: the filters of `GET /calls` (no limit, no cursor) and the format. */
export class ExportCallsQuery extends CallFiltersQuery {
  /** `csv` (RFC 4180, the default) or `ndjson` (one list item per line). @example "csv" */
  @IsOmittable()
  @ApiPropertyOptional({ enum: EXPORT_FORMATS, default: 'csv' })
  @IsOneOf(EXPORT_FORMATS)
  format: ExportFormat = 'csv';
}
