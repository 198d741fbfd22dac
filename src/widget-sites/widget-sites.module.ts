import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '../agents/agents.module';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { WidgetPublicController } from './widget-public.controller';
import { rateLimitOptions } from './widget-rate-limit';
import { WidgetSite } from './widget-site.entity';
import { WidgetSitesController } from './widget-sites.controller';
import { WidgetSitesService } from './widget-sites.service';

@Module({
  imports: [
    TypeOrmModule.forFeature([WidgetSite]),
    AgentsModule,
    // Global module: when an app-wide limit comes, move this registration to AppModule with both throttlers.
    ThrottlerModule.forRootAsync({ inject: [APP_CONFIG], useFactory: (config: AppConfig) => rateLimitOptions(config) }),
  ],
  controllers: [WidgetSitesController, WidgetPublicController],
  providers: [WidgetSitesService],
})
export class WidgetSitesModule {}
