import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AgentVersionsController } from './agent-versions.controller';
import { AgentVersionsRepository } from './agent-versions.repository';
import { AgentVersionsService } from './agent-versions.service';

@Module({
  imports: [AgentsModule],
  controllers: [AgentVersionsController],
  providers: [AgentVersionsService, AgentVersionsRepository],
  exports: [AgentVersionsService],
})
export class AgentVersionsModule {}
