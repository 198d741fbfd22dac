import { IsString } from 'class-validator';
import { CodePointLength, IsOmittable, Trim } from '../../common/validators';

export class CreateKnowledgeBaseDto {
  /** 1–200 characters after trimming. @example "Product FAQ" */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, 200)
  name?: string = 'Untitled';
}
