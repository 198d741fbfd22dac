import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { Responds } from '../common/responds';
import { toVoiceResponse, VoiceChoice, VoiceResponse } from './dto/voice-response.dto';
import { mayUseVoice, VOICES } from './voices';

@ApiTags('agents')
@Controller('voices')
export class VoicesController {
  @Get()
  @ApiOperation({ summary: 'The voice catalog, with whether this account may use each voice' })
  @Responds([VoiceResponse], toVoiceResponse)
  list(@CurrentAccount() account: CallerAccount): VoiceChoice[] {
    return VOICES.map((voice) => ({ voice, available: mayUseVoice(voice.id, account) }));
  }
}
