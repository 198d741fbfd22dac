import { Module } from '@nestjs/common';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { ToolCalls } from './tool-calls';
import { ToolsController } from './tools.controller';
import { ToolsRepository } from './tools.repository';
import { ToolsService } from './tools.service';

/**
 * Tools (contract section 18): the management API, and ToolCalls, which conversations use to run an agent's tools
 * in a turn (a webhook tool's requests go out through the webhooks' WebhookTargets, under their SSRF rules).
 */
@Module({
  imports: [WebhooksModule],
  controllers: [ToolsController],
  providers: [ToolsService, ToolsRepository, ToolCalls],
  exports: [ToolCalls],
})
export class ToolsModule {}
