import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdPipe } from '../common/id.pipes';
import { Serialize } from '../common/serialize';
import { CreateKnowledgeBaseDto } from './dto/create-knowledge-base.dto';
import { CreateSourceDto } from './dto/create-source.dto';
import {
  KnowledgeBaseResponse,
  KnowledgeBaseWithSourcesResponse,
  SourceResponse,
  toKnowledgeBaseResponse,
  toKnowledgeBaseWithSourcesResponse,
  toSourceResponse,
} from './dto/knowledge-base-response.dto';
import { KnowledgeBaseSource } from './knowledge-base-source.entity';
import { KnowledgeBase } from './knowledge-base.entity';
import { KnowledgeBasesService } from './knowledge-bases.service';

const KnowledgeBaseId = () => Param('kbId', new IntIdPipe('Knowledge base'));
const SourceId = () => Param('sourceId', new IntIdPipe('Source'));

@ApiTags('knowledge bases')
@Controller('knowledge-bases')
export class KnowledgeBasesController {
  constructor(private readonly knowledgeBases: KnowledgeBasesService) {}

  @Get()
  @ApiOperation({ summary: 'List the knowledge bases of the account, by id' })
  @Serialize(KnowledgeBaseResponse, toKnowledgeBaseResponse, { isArray: true })
  list(@CurrentAccount() account: CallerAccount): Promise<KnowledgeBase[]> {
    return this.knowledgeBases.list(account.id);
  }

  @Post()
  @ApiOperation({ summary: 'Create a knowledge base' })
  @Serialize(KnowledgeBaseResponse, toKnowledgeBaseResponse, { status: 201 })
  @ApiErrors(400, 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateKnowledgeBaseDto): Promise<KnowledgeBase> {
    return this.knowledgeBases.create(account.id, dto);
  }

  @Get(':kbId')
  @ApiOperation({ summary: 'Get a knowledge base with its sources' })
  @Serialize(KnowledgeBaseWithSourcesResponse, toKnowledgeBaseWithSourcesResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number) {
    return this.knowledgeBases.getWithSources(account.id, kbId);
  }

  @Delete(':kbId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a knowledge base and its sources' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<void> {
    await this.knowledgeBases.remove(account.id, kbId);
  }

  @Get(':kbId/sources')
  @ApiOperation({ summary: 'List the sources of a knowledge base, by id' })
  @Serialize(SourceResponse, toSourceResponse, { isArray: true })
  @ApiErrors(404)
  listSources(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<KnowledgeBaseSource[]> {
    return this.knowledgeBases.listSources(account.id, kbId);
  }

  @Post(':kbId/sources')
  @ApiOperation({ summary: 'Add a source (text, or a URL) to a knowledge base' })
  @Serialize(SourceResponse, toSourceResponse, { status: 201 })
  @ApiErrors(400, 404, 413, 415)
  addSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @Body() dto: CreateSourceDto,
  ): Promise<KnowledgeBaseSource> {
    return this.knowledgeBases.addSource(account.id, kbId, dto);
  }

  @Delete(':kbId/sources/:sourceId')
  @NoContent()
  @ApiOperation({ summary: 'Delete one source of a knowledge base' })
  @ApiErrors(404)
  async removeSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @SourceId() sourceId: number,
  ): Promise<void> {
    await this.knowledgeBases.removeSource(account.id, kbId, sourceId);
  }
}
