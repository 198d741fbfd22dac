import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, ValidateBy } from 'class-validator';
import { IsOmittable, IsOneOf } from '../../common/validators';
import { isCalendarDate } from '../usage-range';

export const USAGE_GROUPINGS = ['day', 'agent'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

/** A calendar date written `YYYY-MM-DD` (years 0001–9999): `2026-02-30`, `2026-2-1` and timestamps are refused. */
const IsCalendarDate = () =>
  ValidateBy({
    name: 'isCalendarDate',
    validator: {
      validate: (value) => typeof value === 'string' && isCalendarDate(value),
      defaultMessage: (args) => `${args?.property} must be a date written YYYY-MM-DD, from 0001-01-01 to 9999-12-31`,
    },
  });

/** Query parameters of `GET /usage`. Unknown parameters are ignored. */
export class UsageQuery {
  /** First UTC day, `YYYY-MM-DD`; defaults to 29 days before `to`. @example "2026-10-24" */
  @IsOmittable()
  @ApiPropertyOptional({ format: 'date' })
  @IsString()
  @IsCalendarDate()
  from?: string;

  /** Last UTC day, included, `YYYY-MM-DD`; defaults to today (UTC). A range is at most 366 days, both ends counted. @example "2026-11-22" */
  @IsOmittable()
  @ApiPropertyOptional({ format: 'date' })
  @IsString()
  @IsCalendarDate()
  to?: string;

  /** `day` (every day of the range, zeros included) or `agent`. @example "day" */
  @IsOmittable()
  @ApiPropertyOptional({ enum: USAGE_GROUPINGS, default: 'day' })
  @IsOneOf(USAGE_GROUPINGS)
  groupBy: UsageGrouping = 'day';
}
