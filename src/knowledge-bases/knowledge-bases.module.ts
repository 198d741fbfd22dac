import { Module } from '@nestjs/common';
import { FileReader } from './file-reader';
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
    FileReader,
    KnowledgeFileUploads,
    SourceUploadInterceptor,
  ],
  exports: [KnowledgeService],
})
export class KnowledgeBasesModule {}
