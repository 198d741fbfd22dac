import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CallerAccount } from '../../auth/caller-account';
import { CurrentAccount } from '../../auth/current-account.decorator';
import { ApiErrors } from '../../common/api-errors.decorator';
import { WritesOwnResponse } from '../../common/responds';
import { VoicePreviewQuery } from './voice-preview-query.dto';
import { VoicePreviews } from './voice-previews.service';

@ApiTags('agents')
@Controller('voices')
export class VoicePreviewController {
  constructor(private readonly previews: VoicePreviews) {}

  @Get(':voiceId/preview')
  @WritesOwnResponse()
  @ApiOperation({
    summary: 'Hear a voice: a short sentence in the language asked for, from the configured text-to-speech',
    description: 'The same voice and language answer the same sample (kept by the service). `language` defaults to `hi-IN`.',
  })
  @ApiParam({ name: 'voiceId', description: 'A voice id of `GET /voices`', example: 'shubh' })
  @ApiResponse({ status: 200, description: 'The sample, MP3', content: { 'audio/mpeg': { schema: { type: 'string', format: 'binary' } } } })
  @ApiErrors(
    400,
    [403, "A preview or next-generation voice, reserved for the platform's own account"],
    [404, 'No such voice'],
    [503, 'No text-to-speech is available (TTS_PROVIDER=none, the built-in synthesizer not installed, or the provider failed)'],
  )
  async preview(
    @CurrentAccount() account: CallerAccount,
    @Param('voiceId') voiceId: string,
    @Query() query: VoicePreviewQuery,
    @Res() response: Response,
  ): Promise<void> {
    const sample = await this.previews.preview(account, voiceId, query.language);
    response.status(200).set({ 'Content-Type': 'audio/mpeg', 'Cache-Control': 'private, max-age=3600' }).end(sample);
  }
}
