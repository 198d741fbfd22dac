import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Agent } from './agent.entity';
import { AgentsController } from './agents.controller';
import { AgentsService } from './agents.service';
import { VoicesController } from './voices.controller';

@Module({
  imports: [TypeOrmModule.forFeature([Agent])],
  controllers: [AgentsController, VoicesController],
  providers: [AgentsService],
  exports: [AgentsService],
})
export class AgentsModule {}
