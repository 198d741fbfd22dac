import { forwardRef, Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { RecordingsModule } from '../recordings/recordings.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { CallsController } from './calls.controller';
import { CallsRepository } from './calls.repository';
import { CallsService } from './calls.service';

@Module({
  // RecordingsModule asks CallsService for the call its recording.ready event carries; this one erases recordings.
  imports: [AgentsModule, forwardRef(() => RecordingsModule), WebhooksModule],
  controllers: [CallsController],
  providers: [CallsService, CallsRepository],
  exports: [CallsService],
})
export class CallsModule {}
