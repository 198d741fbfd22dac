import { Body, Controller, Delete, Get, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
import { Responds } from '../common/responds';
import { CreateKnowledgeBaseDto } from './dto/create-knowledge-base.dto';
import { CreateSourceDto } from './dto/create-source.dto';
import {
  KnowledgeBaseResponse,
  KnowledgeBaseWithSources,
  KnowledgeBaseWithSourcesResponse,
  SourceResponse,
  toKnowledgeBaseResponse,
  toKnowledgeBaseWithSourcesResponse,
  toSourceResponse,
} from './dto/knowledge-base-response.dto';
import { SearchQuery, SearchResultResponse, toSearchResultResponse } from './dto/search.dto';
import { KnowledgeBaseRow, SourceRow } from './knowledge-bases.repository';
import { KnowledgeBasesService } from './knowledge-bases.service';
import { RetrievedPassage } from './knowledge.service';

const KnowledgeBaseId = () => IntIdParam('kbId', 'Knowledge base');
const SourceId = () => IntIdParam('sourceId', 'Source');

@ApiTags('knowledge bases')
@Controller('knowledge-bases')
export class KnowledgeBasesController {
  constructor(private readonly knowledgeBases: KnowledgeBasesService) {}

  @Get()
  @ApiOperation({ summary: 'List the knowledge bases of the account, by id' })
  @Responds([KnowledgeBaseResponse], toKnowledgeBaseResponse)
  list(@CurrentAccount() account: CallerAccount): Promise<KnowledgeBaseRow[]> {
    return this.knowledgeBases.list(account.id);
  }

  @Post()
  @ApiOperation({ summary: 'Create a knowledge base' })
  @Responds(KnowledgeBaseResponse, toKnowledgeBaseResponse, { status: 201 })
  @ApiErrors(400, 413, 415)
  create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateKnowledgeBaseDto): Promise<KnowledgeBaseRow> {
    return this.knowledgeBases.create(account.id, dto);
  }

  @Get(':kbId')
  @ApiOperation({ summary: 'Get a knowledge base with its sources' })
  @Responds(KnowledgeBaseWithSourcesResponse, toKnowledgeBaseWithSourcesResponse)
  @ApiErrors(404)
  get(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<KnowledgeBaseWithSources> {
    return this.knowledgeBases.getWithSources(account.id, kbId);
  }

  @Delete(':kbId')
  @NoContent()
  @ApiOperation({ summary: 'Delete a knowledge base, its sources and their passages; agents that used it no longer do' })
  @ApiErrors(404)
  async remove(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<void> {
    await this.knowledgeBases.remove(account.id, kbId);
  }

  @Get(':kbId/search')
  @ApiOperation({
    summary: 'Search the passages of a knowledge base',
    description:
      "The passages of the knowledge base's `ready` sources that best match `q`, best first (the retrieval that agents answer from). " +
      'Words are matched in any script (Chinese and Japanese by pairs of characters); a passage that shares no word with `q` is not returned, so the answer may be `[]`.',
  })
  @Responds([SearchResultResponse], toSearchResultResponse)
  @ApiErrors(400, 404)
  search(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @Query() query: SearchQuery,
  ): Promise<RetrievedPassage[]> {
    return this.knowledgeBases.search(account.id, kbId, query.q, query.limit);
  }

  @Get(':kbId/sources')
  @ApiOperation({ summary: 'List the sources of a knowledge base, by id' })
  @Responds([SourceResponse], toSourceResponse)
  @ApiErrors(404)
  listSources(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<SourceRow[]> {
    return this.knowledgeBases.listSources(account.id, kbId);
  }

  @Post(':kbId/sources')
  @ApiOperation({
    summary: 'Add a source (text, or a URL) to a knowledge base',
    description:
      'A `text` source is split into passages and searchable at once (`status: ready`). A `url` source is `pending` and fetched in the background ' +
      '(http(s) only, at most 5 redirects, 5 MiB, 15 s; HTML reduced to its readable text, plain text and Markdown kept; private and loopback addresses refused): ' +
      'it becomes `ready`, or `failed` with the reason in `error`.',
  })
  @Responds(SourceResponse, toSourceResponse, { status: 201 })
  @ApiErrors(400, 404, 413, 415)
  addSource(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number, @Body() dto: CreateSourceDto): Promise<SourceRow> {
    return this.knowledgeBases.addSource(account.id, kbId, dto);
  }

  @Post(':kbId/sources/:sourceId/refresh')
  @ApiOperation({
    summary: 'Fetch a url source again',
    description: 'The source is `pending` (and not searchable) until the fetch ends: `ready` or `failed`.',
  })
  @Responds(SourceResponse, toSourceResponse, { status: 202 })
  @ApiErrors([400, 'The source is a text source: only url sources can be refreshed'], 404)
  @ApiNoBody()
  async refreshSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @SourceId() sourceId: number,
    @Body() body: unknown,
  ): Promise<SourceRow> {
    refuseBodyFields(body);
    return this.knowledgeBases.refreshSource(account.id, kbId, sourceId);
  }

  @Delete(':kbId/sources/:sourceId')
  @NoContent()
  @ApiOperation({ summary: 'Delete one source of a knowledge base, and its passages' })
  @ApiErrors(404)
  async removeSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @SourceId() sourceId: number,
  ): Promise<void> {
    await this.knowledgeBases.removeSource(account.id, kbId, sourceId);
  }
}
