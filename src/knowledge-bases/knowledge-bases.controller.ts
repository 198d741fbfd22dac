import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerAccount } from '../auth/caller-account';
import { CurrentAccount } from '../auth/current-account.decorator';
import { ApiErrors, NoContent } from '../common/api-errors.decorator';
import { IntIdParam } from '../common/id.pipes';
import { ApiNoBody, refuseBodyFields } from '../common/no-body';
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
import { SearchQuery, SearchResultResponse, toSearchResultResponse } from './dto/search.dto';
import { KnowledgeBasesService } from './knowledge-bases.service';

const KnowledgeBaseId = () => IntIdParam('kbId', 'Knowledge base');
const SourceId = () => IntIdParam('sourceId', 'Source');

@ApiTags('knowledge bases')
@Controller('knowledge-bases')
export class KnowledgeBasesController {
  constructor(private readonly knowledgeBases: KnowledgeBasesService) {}

  @Get()
  @ApiOperation({ summary: 'List the knowledge bases of the account, by id' })
  @ApiOkResponse({ type: KnowledgeBaseResponse, isArray: true })
  async list(@CurrentAccount() account: CallerAccount): Promise<KnowledgeBaseResponse[]> {
    return (await this.knowledgeBases.list(account.id)).map(toKnowledgeBaseResponse);
  }

  @Post()
  @ApiOperation({ summary: 'Create a knowledge base' })
  @ApiCreatedResponse({ type: KnowledgeBaseResponse })
  @ApiErrors(400, 413, 415)
  async create(@CurrentAccount() account: CallerAccount, @Body() dto: CreateKnowledgeBaseDto): Promise<KnowledgeBaseResponse> {
    return toKnowledgeBaseResponse(await this.knowledgeBases.create(account.id, dto));
  }

  @Get(':kbId')
  @ApiOperation({ summary: 'Get a knowledge base with its sources' })
  @ApiOkResponse({ type: KnowledgeBaseWithSourcesResponse })
  @ApiErrors(404)
  async get(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<KnowledgeBaseWithSourcesResponse> {
    const { knowledgeBase, sources } = await this.knowledgeBases.getWithSources(account.id, kbId);
    return toKnowledgeBaseWithSourcesResponse(knowledgeBase, sources);
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
  @ApiOkResponse({ type: SearchResultResponse, isArray: true })
  @ApiErrors(400, 404)
  async search(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @Query() query: SearchQuery,
  ): Promise<SearchResultResponse[]> {
    return (await this.knowledgeBases.search(account.id, kbId, query.q, query.limit)).map(toSearchResultResponse);
  }

  @Get(':kbId/sources')
  @ApiOperation({ summary: 'List the sources of a knowledge base, by id' })
  @ApiOkResponse({ type: SourceResponse, isArray: true })
  @ApiErrors(404)
  async listSources(@CurrentAccount() account: CallerAccount, @KnowledgeBaseId() kbId: number): Promise<SourceResponse[]> {
    return (await this.knowledgeBases.listSources(account.id, kbId)).map(toSourceResponse);
  }

  @Post(':kbId/sources')
  @ApiOperation({
    summary: 'Add a source (text, or a URL) to a knowledge base',
    description:
      'A `text` source is split into passages and searchable at once (`status: ready`). A `url` source is `pending` and fetched in the background ' +
      '(http(s) only, at most 5 redirects, 5 MiB, 15 s; HTML reduced to its readable text, plain text and Markdown kept; private and loopback addresses refused): ' +
      'it becomes `ready`, or `failed` with the reason in `error`.',
  })
  @ApiCreatedResponse({ type: SourceResponse })
  @ApiErrors(400, 404, 413, 415)
  async addSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @Body() dto: CreateSourceDto,
  ): Promise<SourceResponse> {
    return toSourceResponse(await this.knowledgeBases.addSource(account.id, kbId, dto));
  }

  @Post(':kbId/sources/:sourceId/refresh')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Fetch a url source again',
    description: 'The source is `pending` (and not searchable) until the fetch ends: `ready` or `failed`.',
  })
  @ApiAcceptedResponse({ type: SourceResponse })
  @ApiErrors([400, 'The source is a text source: only url sources can be refreshed'], 404)
  @ApiNoBody()
  async refreshSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @SourceId() sourceId: number,
    @Body() body: unknown,
  ): Promise<SourceResponse> {
    refuseBodyFields(body);
    return toSourceResponse(await this.knowledgeBases.refreshSource(account.id, kbId, sourceId));
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
