import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { KnowledgeBaseSource } from './knowledge-base-source.entity';
import { KnowledgeBase } from './knowledge-base.entity';
import { KnowledgeBasesController } from './knowledge-bases.controller';
import { KnowledgeBasesService } from './knowledge-bases.service';

@Module({
  imports: [TypeOrmModule.forFeature([KnowledgeBase, KnowledgeBaseSource])],
  controllers: [KnowledgeBasesController],
  providers: [KnowledgeBasesService],
})
export class KnowledgeBasesModule {}
