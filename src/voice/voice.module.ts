import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { ConversationsModule } from '../conversations/conversations.module';
import { RecordingsModule } from '../recordings/recordings.module';
import { SpokenCalls } from './pipeline/spoken-calls.service';
import { VoiceClock } from './pipeline/voice-clock';
import { VoicePreviewController } from './preview/voice-preview.controller';
import { VoicePreviews } from './preview/voice-previews.service';
import { CallRecordings } from './recording/call-recorder';
import { Mp3Encoding } from './recording/mp3-encoding';
import { RecordingAssembly } from './recording/recording-assembly';
import { RecordingSegmentsRepository } from './recording/recording-segments.repository';
import { speechProviders } from './speech-providers';
import { VoiceCalls } from './voice-call';
import { VoiceCapacityModule } from './voice-capacity';
import { VoiceCredentialLimit } from './voice-credential-limit';
import { VOICE_SESSION_TIMINGS, VoiceGateway } from './voice.gateway';
import { VoiceLeasesRepository } from './voice-leases.repository';
import { VoiceSocketController } from './voice-socket.controller';
import { DEFAULT_TIMINGS } from './voice-session';

/**
 * Voice (contract section 15): the voice socket on the API's own server, the pipeline behind it (turn-taking,
 * the answering of section 10, text-to-speech, speech-to-text), the spoken calls' recordings, and the voice
 * previews. Conversations stay the conversations module's: a spoken turn goes through its services.
 */
@Module({
  imports: [ConversationsModule, AgentsModule, RecordingsModule, VoiceCapacityModule],
  controllers: [VoicePreviewController, VoiceSocketController],
  providers: [
    VoiceGateway,
    VoiceCredentialLimit,
    VoiceLeasesRepository,
    VoiceClock,
    { provide: VoiceCalls, useClass: SpokenCalls },
    // An object of each application's own: a test shortens its timings on the instance it drives.
    { provide: VOICE_SESSION_TIMINGS, useFactory: () => ({ ...DEFAULT_TIMINGS }) },
    ...speechProviders,
    Mp3Encoding,
    CallRecordings,
    RecordingSegmentsRepository,
    RecordingAssembly,
    VoicePreviews,
  ],
  exports: [VoiceGateway, VoiceCalls, VoiceLeasesRepository, VoiceCredentialLimit],
})
export class VoiceModule {}
