import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { VoiceCapacityModule } from '../voice/voice-capacity';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), VoiceCapacityModule],
  controllers: [HealthController],
})
export class HealthModule {}
