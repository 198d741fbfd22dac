import {
  Controller,
  ForbiddenException,
  Get,
  HttpException,
  HttpStatus,
  Inject,
  NotFoundException,
  Param,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../auth/public.decorator';
import { ApiErrors } from '../common/api-errors.decorator';
import { WritesOwnResponse } from '../common/responds';
import { parseRange } from './byte-range';
import { RecordingStorage } from './recording-storage';
import { MP3, sendRecording } from './send-recording';
import { PlaybackUrlSigner } from './signed-url';

/** The signer of the local driver's URLs; null under another driver (which signs its own URLs). */
export const PLAYBACK_SIGNER = Symbol('PLAYBACK_SIGNER');

/**
 * Serves the local storage driver's signed playback URLs, without an API key: the URL itself is the
 * credential. An expired or altered URL is a 403. Honours a single `Range` so that players can seek.
 */
@ApiTags('recordings')
@Controller('recordings')
export class PlaybackController {
  constructor(
    private readonly storage: RecordingStorage,
    @Inject(PLAYBACK_SIGNER) private readonly signer: PlaybackUrlSigner | null,
  ) {}

  @Get(':token')
  @Public()
  @WritesOwnResponse()
  @ApiOperation({
    summary: 'Play a recording through a signed URL (local storage driver)',
    description:
      'The URL comes from `GET /calls/{callId}/recording`; no API key. Honours `Range` (206 with `Content-Range`; 416 when ' +
      'unsatisfiable). With `STORAGE_DRIVER=s3` the playback URLs point at the bucket instead, and this route answers 404.',
  })
  @ApiParam({ name: 'token', description: 'The recording, as an opaque encrypted token' })
  @ApiQuery({ name: 'expires', type: String, description: 'Unix time (seconds) the URL stops working', example: '1795000000' })
  @ApiQuery({ name: 'signature', type: String, description: 'HMAC-SHA256 signature of the token and expiry, base64url' })
  @ApiResponse({ status: 200, description: 'The whole MP3', content: MP3 })
  @ApiResponse({ status: 206, description: 'The range asked for', content: MP3 })
  @ApiErrors(
    [403, 'The URL has expired or was altered'],
    [404, 'The recording no longer exists'],
    [416, 'The range is outside the recording'],
  )
  async play(
    @Param('token') token: string,
    @Query('expires') expires: unknown,
    @Query('signature') signature: unknown,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    if (!this.signer) throw new NotFoundException('Not found');
    const key = this.signer.verify(token, expires, signature, Math.floor(Date.now() / 1000));
    if (!key) throw new ForbiddenException('This recording URL has expired or is not valid');
    const size = await this.storage.size(key);
    if (size === undefined) throw new NotFoundException('This recording no longer exists');

    response.setHeader('Accept-Ranges', 'bytes');
    const range = parseRange(request.headers.range, size);
    if (range.kind === 'unsatisfiable') {
      response.setHeader('Content-Range', `bytes */${size}`);
      throw new HttpException(`The range is outside the recording (${size} bytes)`, HttpStatus.REQUESTED_RANGE_NOT_SATISFIABLE);
    }
    const part = range.kind === 'partial' ? range.range : undefined;
    const opened = await this.storage.open(key, part);
    if (!opened) throw new NotFoundException('This recording no longer exists');
    response.setHeader('Content-Disposition', 'inline');
    if (part) {
      response.status(206).setHeader('Content-Range', `bytes ${part.start}-${part.end}/${opened.size}`);
    } else {
      response.status(200);
    }
    await sendRecording(request, response, opened.stream, part ? part.end - part.start + 1 : opened.size);
  }
}
