import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { ToInteger } from '../../common/query-params';
import { IsOmittable } from '../../common/validators';

export class ListDeliveriesQuery {
  /** Deliveries returned, newest first, 1–200. @example 50 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer' })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(200)
  limit: number = 50;
}
