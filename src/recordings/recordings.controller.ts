import { Controller, Delete, Get, HttpCode, Param, Put, Req, Res, UnsupportedMediaTypeException } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { UuidPipe } from '../common/id.pipes';
import { Responds, WritesOwnResponse } from '../common/responds';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { tooLarge } from './byte-limit';
import { RecordingUrlResponse, toRecordingUrlResponse } from './dto/recording-url-response.dto';
import { RecordingsService, RecordingUrl } from './recordings.service';
import { MP3, sendRecording } from './send-recording';

const CallId = () => Param('callId', new UuidPipe('Call'));
const CALL_ID_PARAM = { name: 'callId', format: 'uuid', description: 'Anything that is not a UUID is a 404, like an unknown id' };
const AUDIO_MPEG = /^audio\/mpeg\s*(;|$)/i;

/** The calls' recordings: upload, delete, a playback URL, and the MP3 download. */
@ApiTags('calls')
@ApiParam(CALL_ID_PARAM)
@Controller('calls/:callId/recording')
export class RecordingsController {
  constructor(
    private readonly recordings: RecordingsService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Put()
  @HttpCode(204)
  @ApiOperation({
    summary: "Upload (or replace) the call's recording",
    description:
      'The raw MP3 bytes as the body, streamed to storage. At most 200 MiB (`RECORDING_MAX_BYTES`). The call keeps its ' +
      'previous recording, if any, until the new one is completely stored; a failed upload leaves nothing behind.',
  })
  @ApiConsumes('audio/mpeg')
  @ApiBody({ schema: { type: 'string', format: 'binary' } })
  @ApiResponse({ status: 204, description: 'Stored; `hasRecording` is now true' })
  @ApiErrors(
    [400, 'Empty body, or the upload was interrupted'],
    404,
    [413, 'Over 200 MiB (by Content-Length, or counted while streaming)'],
    [415, 'Content-Type is not audio/mpeg'],
  )
  async upload(
    @CurrentAccount() account: CallerAccount,
    @CallId() callId: string,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<void> {
    try {
      await this.recordings.assertCall(account.id, callId);
      if (!AUDIO_MPEG.test(request.headers['content-type'] ?? ''))
        throw new UnsupportedMediaTypeException('Content-Type must be audio/mpeg');
      const declared = Number(request.headers['content-length']);
      if (declared > this.config.storage.maxRecordingBytes) throw tooLarge(this.config.storage.maxRecordingBytes);
      await this.recordings.upload(account.id, callId, request);
    } catch (error) {
      // The rest of a refused body is not read: close the connection after the answer instead.
      if (!request.complete) response.setHeader('Connection', 'close');
      throw error;
    }
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: "Delete the call's recording" })
  @ApiResponse({ status: 204, description: 'Deleted; `hasRecording` is now false' })
  @ApiErrors([404, 'No such call on this account, or it has no recording'])
  async remove(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<void> {
    await this.recordings.remove(account.id, callId);
  }

  @Get()
  @ApiOperation({
    summary: 'A short-lived URL that plays the recording',
    description:
      'A fresh URL on every request, valid for `RECORDING_URL_TTL_SECONDS` (default 300), usable without an API key (for an `<audio>` element).',
  })
  @Responds(RecordingUrlResponse, toRecordingUrlResponse, { description: 'The URL and when it expires' })
  @ApiErrors([404, 'No such call on this account, or it has no recording'])
  playbackUrl(@CurrentAccount() account: CallerAccount, @CallId() callId: string): Promise<RecordingUrl> {
    return this.recordings.playbackUrl(account.id, callId);
  }

  @Get('download')
  @ApiOperation({
    summary: 'Download the recording as an MP3 file',
    description:
      "Streamed, with `Content-Length` and `Content-Disposition: attachment`: `filename` is an ASCII rendering of the caller's " +
      'name and, when the name is not plain ASCII, `filename*` carries it in UTF-8; a blank name gives `call-<callId>.mp3`.',
  })
  @WritesOwnResponse()
  @ApiResponse({ status: 200, description: 'The MP3', content: MP3 })
  @ApiErrors([404, 'No such call on this account, or it has no recording'])
  async download(
    @CurrentAccount() account: CallerAccount,
    @CallId() callId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    const recording = await this.recordings.download(account.id, callId);
    response.status(200);
    response.setHeader('Content-Disposition', recording.contentDisposition);
    await sendRecording(request, response, recording.stream, recording.size);
  }
}
