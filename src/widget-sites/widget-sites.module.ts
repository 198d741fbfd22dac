import { AgentVersionsModule } from '../agent-versions/agent-versions.module';
import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { WidgetPublicController } from './widget-public.controller';
import { WidgetSitesController } from './widget-sites.controller';
import { WidgetSitesRepository } from './widget-sites.repository';
import { WidgetSitesService } from './widget-sites.service';

@Module({
  imports: [AgentsModule, AgentVersionsModule],
  controllers: [WidgetSitesController, WidgetPublicController],
  providers: [WidgetSitesService, WidgetSitesRepository],
  exports: [WidgetSitesService],
})
export class WidgetSitesModule {}
