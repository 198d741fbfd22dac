import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { toVoiceResponse, VoiceResponse } from './dto/voice-response.dto';
import { mayUseVoice, VOICES } from './voices';

@ApiTags('agents')
@Controller('voices')
export class VoicesController {
  @Get()
  @ApiOperation({ summary: 'The voice catalog, with whether this account may use each voice' })
  @ApiOkResponse({ type: VoiceResponse, isArray: true })
  list(@CurrentAccount() account: CallerAccount): VoiceResponse[] {
    return VOICES.map((voice) => toVoiceResponse(voice, mayUseVoice(voice.id, account)));
  }
}
