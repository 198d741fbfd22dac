import { IsString, Length } from 'class-validator';
import { IsOmittable, Trim } from '../../common/validators';

export class CreateKnowledgeBaseDto {
  /** 1–200 characters after trimming. @example "Product FAQ" */
  @IsOmittable()
  @Trim()
  @IsString()
  @Length(1, 200)
  name?: string = 'Untitled';
}
