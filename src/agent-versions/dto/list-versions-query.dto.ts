import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { MAX_INT_ID } from '../../common/id.pipes';
import { ToInteger } from '../../common/query-params';
import { IsOmittable } from '../../common/validators';

export class ListVersionsQuery {
  /** Versions returned, newest first, 1–200. @example 50 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(200)
  limit: number = 50;

  /** Only versions numbered below this one: the next page starts before the last version of the previous. @example 7 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(MAX_INT_ID)
  before?: number;
}
