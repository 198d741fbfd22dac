import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { ConversationCalls } from '../conversations/conversation-calls.service';
import { ConversationsModule } from '../conversations/conversations.module';
import { VoiceCapacityModule } from '../voice/voice-capacity';
import { VoiceModule } from '../voice/voice.module';
import { CarrierSignatureLimit } from '../rate-limit/carrier-rate-limit';
import { AuthTokenBox, loadTelephonySecret } from './auth-token-box';
import { CallProgress } from './call-progress.service';
import { CarrierWebhooks } from './carrier-webhooks.service';
import { InboundCalls } from './inbound-calls.service';
import { OutboundCalls } from './outbound-calls.service';
import { PhoneCallsRepository } from './phone-calls.repository';
import { PhoneNumbersController } from './phone-numbers.controller';
import { PhoneNumbersRepository } from './phone-numbers.repository';
import { PhoneNumbersService } from './phone-numbers.service';
import { PhoneStreams } from './phone-streams';
import { DEFAULT_STREAM_TIMINGS } from './twilio-media-stream';
import { TwilioStreamController } from './twilio-stream.controller';
import { MEDIA_STREAM_TIMINGS, TwilioStreamGateway } from './twilio-stream.gateway';
import { TwilioRest } from './twilio-rest';
import { TwilioWebhooksController } from './twilio-webhooks.controller';

/**
 * Telephony (contract section 17): the account's phone numbers on the carrier (Twilio), the carrier's webhooks
 * (calls to a number, calls' progress), the calls the agents place, and the media streams that carry the calls'
 * audio through the voice pipeline (a transport of its own: TwilioMediaStream), with their hang-ups (PhoneStreams).
 */
@Module({
  imports: [AgentsModule, ConversationsModule, VoiceModule, VoiceCapacityModule],
  controllers: [PhoneNumbersController, TwilioWebhooksController, TwilioStreamController],
  providers: [
    PhoneNumbersRepository,
    PhoneCallsRepository,
    PhoneNumbersService,
    CarrierWebhooks,
    InboundCalls,
    OutboundCalls,
    CallProgress,
    TwilioRest,
    CarrierSignatureLimit,
    PhoneStreams,
    TwilioStreamGateway,
    // An object of each application's own: a test shortens its timings on the instance it drives.
    {
      provide: MEDIA_STREAM_TIMINGS,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({ ...DEFAULT_STREAM_TIMINGS, maxCallSeconds: config.telephony.maxCallSeconds }),
    },
    {
      provide: AuthTokenBox,
      inject: [APP_CONFIG],
      useFactory: async (config: AppConfig) => new AuthTokenBox(await loadTelephonySecret(config.telephony.secret, config.dataDir)),
    },
  ],
  exports: [PhoneNumbersService, PhoneCallsRepository, TwilioRest],
})
export class TelephonyModule {
  constructor(conversationCalls: ConversationCalls, calls: PhoneCallsRepository) {
    // Erasing a phone call's call erases what the carrier reported of it (its row goes with the conversation).
    conversationCalls.whenErased((sql, accountId, id) => calls.deleteStatusesForErasure(accountId, id, sql));
  }
}
