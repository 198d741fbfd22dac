import { ApiPropertyOptional } from '@nestjs/swagger';
import { REPLY_LANGUAGES, ReplyLanguage } from '../../agents/voices';
import { IsOmittable, IsOneOf } from '../../common/validators';

/** Query parameters of `GET /voices/{voiceId}/preview`. Unknown parameters are ignored. */
export class VoicePreviewQuery {
  /** The language the voice speaks the sample in. @example "ta-IN" */
  @IsOmittable()
  @ApiPropertyOptional({ enum: REPLY_LANGUAGES, default: 'hi-IN' })
  @IsOneOf(REPLY_LANGUAGES)
  language: ReplyLanguage = 'hi-IN';
}
