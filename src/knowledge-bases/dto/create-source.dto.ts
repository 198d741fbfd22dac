import { isURL, IsString, Validate, ValidationArguments, ValidatorConstraint, ValidatorConstraintInterface } from 'class-validator';
import { CodePointLength, codePointLength, IsOmittable, IsOneOf, Trim } from '../../common/validators';
import { MAX_TEXT_CONTENT_LENGTH } from '../indexed-passages';
import { SOURCE_TYPES, SourceType } from '../knowledge-base-source.entity';

export const MAX_URL_LENGTH = 2048;

/** What `content` must be depends on the source's `type`. */
@ValidatorConstraint({ name: 'sourceContent' })
class SourceContentRule implements ValidatorConstraintInterface {
  validate(content: unknown, args: ValidationArguments): boolean {
    if (typeof content !== 'string') return false;
    if ((args.object as CreateSourceDto).type !== 'url') return codePointLength(content) <= MAX_TEXT_CONTENT_LENGTH;
    return (
      codePointLength(content) <= MAX_URL_LENGTH &&
      isURL(content, { protocols: ['http', 'https'], require_protocol: true, require_tld: false })
    );
  }

  defaultMessage(args: ValidationArguments): string {
    return (args.object as CreateSourceDto).type === 'url'
      ? `content must be an absolute http or https URL of at most ${MAX_URL_LENGTH} characters for a url source`
      : `content must be at most ${MAX_TEXT_CONTENT_LENGTH} characters for a text source`;
  }
}

export class CreateSourceDto {
  /** 1–200 characters after trimming. @example "Opening hours" */
  @IsOmittable()
  @Trim()
  @IsString()
  @CodePointLength(1, 200)
  name?: string = 'Untitled';

  /**
   * `text`: content is the text itself; `url`: content is an absolute http or https URL; `file` only with a
   * `multipart/form-data` upload (a JSON body cannot create one). @example "text"
   */
  @IsOmittable()
  @IsOneOf(SOURCE_TYPES)
  type?: SourceType = 'text';

  /**
   * For `text` sources the text, at most 500,000 characters in any script, stored byte-exact; for `url` sources an
   * absolute http or https URL of at most 2,048 characters. @example "We are open 9:00–18:00, Monday to Saturday."
   */
  @IsOmittable()
  @IsString()
  @Validate(SourceContentRule)
  content?: string = '';
}
