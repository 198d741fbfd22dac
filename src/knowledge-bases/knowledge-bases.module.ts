import { Module } from '@nestjs/common';
import { KnowledgeFileUploads } from './file-uploads';
import { KnowledgeBasesController } from './knowledge-bases.controller';
import { KnowledgeBasesRepository } from './knowledge-bases.repository';
import { KnowledgeBasesService } from './knowledge-bases.service';
import { KnowledgeService } from './knowledge.service';
import { SourceIndexing } from './source-indexing';
import { SourceUploadInterceptor } from './source-upload';

/** Knowledge bases, their sources (text, url and file) and passages, and retrieval over them (KnowledgeService, for the agents). */
@Module({
  controllers: [KnowledgeBasesController],
  providers: [
    KnowledgeBasesService,
    KnowledgeBasesRepository,
    KnowledgeService,
    SourceIndexing,
    KnowledgeFileUploads,
    SourceUploadInterceptor,
  ],
  exports: [KnowledgeService],
})
export class KnowledgeBasesModule {}
