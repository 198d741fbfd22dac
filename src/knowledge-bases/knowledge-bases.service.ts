import { BadRequestException, Injectable, NotFoundException } from '@nestjs/common';
import { RequestValidationException } from '../common/validation';
import { Database } from '../database/database';
import { CreateKnowledgeBaseDto } from './dto/create-knowledge-base.dto';
import { CreateSourceDto } from './dto/create-source.dto';
import { KnowledgeBaseRow, KnowledgeBasesRepository, SourceRow } from './knowledge-bases.repository';
import { KnowledgeService, RetrievedPassage } from './knowledge.service';
import { sourceNameOf } from './file-name';
import { CONTENT_TYPES } from './file-type';
import { toPassages } from './indexed-passages';
import { SourceIndexing } from './source-indexing';
import type { FileSourceForm } from './source-upload';

const knowledgeBaseNotFound = (id: number) => new NotFoundException(`Knowledge base ${id} not found`);
const sourceNotFound = (id: number) => new NotFoundException(`Source ${id} not found`);

/** The rules of knowledge bases and their sources (404s, indexing on create, refresh); the SQL is the repository's. */
@Injectable()
export class KnowledgeBasesService {
  constructor(
    private readonly repository: KnowledgeBasesRepository,
    private readonly database: Database,
    private readonly indexing: SourceIndexing,
    private readonly knowledge: KnowledgeService,
  ) {}

  list(accountId: number): Promise<KnowledgeBaseRow[]> {
    return this.repository.listKnowledgeBases(accountId);
  }

  async get(accountId: number, id: number): Promise<KnowledgeBaseRow> {
    return (await this.repository.getKnowledgeBase(accountId, id)) ?? Promise.reject(knowledgeBaseNotFound(id));
  }

  async getWithSources(accountId: number, id: number): Promise<{ knowledgeBase: KnowledgeBaseRow; sources: SourceRow[] }> {
    const [knowledgeBase, sources] = await Promise.all([this.get(accountId, id), this.repository.listSources(accountId, id)]);
    return { knowledgeBase, sources };
  }

  create(accountId: number, dto: CreateKnowledgeBaseDto): Promise<KnowledgeBaseRow> {
    return this.repository.insertKnowledgeBase(accountId, dto.name!);
  }

  async remove(accountId: number, id: number): Promise<void> {
    if (!(await this.repository.deleteKnowledgeBase(accountId, id))) throw knowledgeBaseNotFound(id);
  }

  async listSources(accountId: number, knowledgeBaseId: number): Promise<SourceRow[]> {
    const [sources] = await Promise.all([this.repository.listSources(accountId, knowledgeBaseId), this.get(accountId, knowledgeBaseId)]);
    return sources;
  }

  /**
   * Adds a source in one transaction that locks the knowledge base (a concurrent delete waits, so no source
   * is orphaned) and touches its updatedAt. A text source is split and indexed here (its passages commit with
   * it: `ready` at once); a url source is `pending`, and its fetch job is queued in the same transaction.
   */
  addSource(accountId: number, knowledgeBaseId: number, dto: CreateSourceDto): Promise<SourceRow> {
    const type = dto.type!;
    if (type === 'file') {
      throw new RequestValidationException([
        { field: 'type', message: 'type file is created by uploading the file as multipart/form-data, in a part named file' },
      ]);
    }
    const passages = type === 'text' ? toPassages(dto.content!) : [];
    return this.database.transaction(async (sql) => {
      if (!(await this.repository.touchKnowledgeBase(accountId, knowledgeBaseId, sql))) throw knowledgeBaseNotFound(knowledgeBaseId);
      const source = await this.repository.insertSource(
        accountId,
        knowledgeBaseId,
        { name: dto.name!, type, content: dto.content!, status: type === 'text' ? 'ready' : 'pending' },
        sql,
      );
      if (type === 'text') await this.repository.insertPassages(accountId, knowledgeBaseId, source.id, passages, sql);
      else await this.indexing.send({ accountId, sourceId: source.id }, type, sql);
      return source;
    });
  }

  /**
   * Makes an upload a file source, `pending`, in one transaction that locks the knowledge base (as addSource),
   * gives the upload its source and queues the reading of the file. If this fails, the caller deletes the upload.
   */
  addFileSource(accountId: number, knowledgeBaseId: number, { upload, name }: FileSourceForm): Promise<SourceRow> {
    return this.database.transaction(async (sql) => {
      if (!(await this.repository.touchKnowledgeBase(accountId, knowledgeBaseId, sql))) throw knowledgeBaseNotFound(knowledgeBaseId);
      const source = await this.repository.insertSource(
        accountId,
        knowledgeBaseId,
        {
          name: name ?? sourceNameOf(upload.fileName),
          type: 'file',
          content: '',
          status: 'pending',
          fileName: upload.fileName,
          contentType: CONTENT_TYPES[upload.kind],
          bytes: upload.bytes,
        },
        sql,
      );
      // Only an upload this request stored and no other request took (it has no source yet) can be attached.
      if (!(await this.repository.attachFile(accountId, upload.fileId, source.id, sql))) throw new Error('The stored upload is gone');
      await this.indexing.send({ accountId, sourceId: source.id }, 'file', sql);
      return source;
    });
  }

  async removeSource(accountId: number, knowledgeBaseId: number, sourceId: number): Promise<void> {
    if (!(await this.repository.deleteSource(accountId, knowledgeBaseId, sourceId))) {
      await this.get(accountId, knowledgeBaseId);
      throw sourceNotFound(sourceId);
    }
  }

  /**
   * Fetches a url source again, or reads a file source's kept file again: `pending` at once (its passages are
   * withdrawn until it succeeds), the job queued in the same transaction. A text source has nothing to fetch: 400.
   */
  async refreshSource(accountId: number, knowledgeBaseId: number, sourceId: number): Promise<SourceRow> {
    const source = await this.database.transaction(async (sql) => {
      const restarted = await this.repository.restartSource(accountId, knowledgeBaseId, sourceId, sql);
      if (restarted) await this.indexing.send({ accountId, sourceId }, restarted.type, sql);
      return restarted;
    });
    if (source) return source;
    const type = await this.repository.getSourceType(accountId, knowledgeBaseId, sourceId);
    if (type === 'text') throw new BadRequestException(`Source ${sourceId} is a text source: only url and file sources can be refreshed`);
    await this.get(accountId, knowledgeBaseId);
    throw sourceNotFound(sourceId);
  }

  async search(accountId: number, knowledgeBaseId: number, query: string, limit: number): Promise<RetrievedPassage[]> {
    const [passages] = await Promise.all([
      this.knowledge.retrieve(accountId, [knowledgeBaseId], query, limit),
      this.get(accountId, knowledgeBaseId),
    ]);
    return passages;
  }
}
