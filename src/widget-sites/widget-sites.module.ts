import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { WidgetPublicController } from './widget-public.controller';
import { WidgetSite } from './widget-site.entity';
import { WidgetSitesController } from './widget-sites.controller';
import { WidgetSitesService } from './widget-sites.service';

@Module({
  imports: [
    TypeOrmModule.forFeature([WidgetSite]),
    AgentsModule,
  ],
  controllers: [WidgetSitesController, WidgetPublicController],
  providers: [WidgetSitesService],
  exports: [WidgetSitesService],
})
export class WidgetSitesModule {}
