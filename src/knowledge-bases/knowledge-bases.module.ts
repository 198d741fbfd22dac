import { Module } from '@nestjs/common';
import { KnowledgeBasesController } from './knowledge-bases.controller';
import { KnowledgeBasesRepository } from './knowledge-bases.repository';
import { KnowledgeBasesService } from './knowledge-bases.service';
import { KnowledgeService } from './knowledge.service';
import { SourceIndexing } from './source-indexing';

/** Knowledge bases, their sources and passages, and retrieval over them (KnowledgeService, for the agents). */
@Module({
  controllers: [KnowledgeBasesController],
  providers: [KnowledgeBasesService, KnowledgeBasesRepository, KnowledgeService, SourceIndexing],
  exports: [KnowledgeService],
})
export class KnowledgeBasesModule {}
