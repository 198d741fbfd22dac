import { Body, Controller, Delete, Get, Post, Query, Req, UploadedFile } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
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
import type { StoredUpload } from './file-uploads';
import { KnowledgeBaseRow, SourceRow } from './knowledge-bases.repository';
import { KnowledgeBasesService } from './knowledge-bases.service';
import { RetrievedPassage } from './knowledge.service';
import { AcceptsSourceUpload, fileSourceForm, isUpload } from './source-upload';

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
    summary: 'Add a source (text, a URL, or a file) to a knowledge base',
    description:
      'A `text` source is split into passages and searchable at once (`status: ready`). A `url` source is `pending` and fetched in the background ' +
      '(http(s) only, at most 5 redirects, 5 MiB, 15 s; HTML reduced to its readable text, plain text and Markdown kept; private and loopback addresses refused): ' +
      'it becomes `ready`, or `failed` with the reason in `error`.\n\n' +
      'A `file` source is uploaded as `multipart/form-data` (a `file` part, and an optional `name`): PDF, DOCX, Markdown, plain text, HTML or CSV, at most 20 MiB ' +
      '(`KNOWLEDGE_MAX_FILE_BYTES`). It is answered at once, `pending`, and its file read in the background: PDF and DOCX as their text, HTML reduced to its ' +
      'readable text, Markdown and text as they are, CSV as passages of whole rows, each row as `column: value` pairs. It becomes `ready` with that text as ' +
      '`content` (its first 500,000 characters, which are indexed), or `failed` with the reason in `error` (a PDF with a password or only scanned images, a damaged file, a zip bomb). ' +
      'The file is kept: `refresh` reads it again, deleting the source deletes it.',
  })
  @AcceptsSourceUpload()
  @Responds(SourceResponse, toSourceResponse, { status: 201 })
  @ApiErrors(
    [400, 'An upload without a `file` part, with an empty file, a malformed form, or a field other than `name` and `type`'],
    404,
    [413, 'The file is over 20 MiB (`KNOWLEDGE_MAX_FILE_BYTES`): the upload is cut off at once'],
    [415, 'The file is none of PDF, DOCX, Markdown, plain text (UTF-8), HTML and CSV'],
  )
  addSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @Body() dto: CreateSourceDto,
    @UploadedFile() upload: StoredUpload | undefined,
    @Req() request: Request,
  ): Promise<SourceRow> {
    if (!isUpload(request)) return this.knowledgeBases.addSource(account.id, kbId, dto);
    return this.knowledgeBases.addFileSource(account.id, kbId, fileSourceForm(request.body as Record<string, unknown>, dto, upload));
  }

  @Post(':kbId/sources/:sourceId/refresh')
  @ApiOperation({
    summary: "Fetch a url source again, or read a file source's file again",
    description: 'The source is `pending` (and not searchable) until the fetch or the reading ends: `ready` or `failed`.',
  })
  @Responds(SourceResponse, toSourceResponse, { status: 202 })
  @ApiErrors([400, 'The source is a text source: only url and file sources can be refreshed'], 404)
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
  @ApiOperation({ summary: 'Delete one source of a knowledge base, its passages, and its file (a file source)' })
  @ApiErrors(404)
  async removeSource(
    @CurrentAccount() account: CallerAccount,
    @KnowledgeBaseId() kbId: number,
    @SourceId() sourceId: number,
  ): Promise<void> {
    await this.knowledgeBases.removeSource(account.id, kbId, sourceId);
  }
}
