import { IsString } from 'class-validator';
import { IsOmittable, MaxCodePointLength } from '../../common/validators';

export const MAX_VERSION_DESCRIPTION = 500;

export class PublishVersionDto {
  /** What changed, at most 500 characters ("" when not given). @example "Friendlier greeting; answers from the FAQ" */
  @IsOmittable()
  @IsString()
  @MaxCodePointLength(MAX_VERSION_DESCRIPTION)
  description?: string = '';
}
