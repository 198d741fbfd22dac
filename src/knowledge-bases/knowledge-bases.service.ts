import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { CreateKnowledgeBaseDto } from './dto/create-knowledge-base.dto';
import { CreateSourceDto } from './dto/create-source.dto';
import { KnowledgeBaseSource } from './knowledge-base-source.entity';
import { KnowledgeBase } from './knowledge-base.entity';

const notFound = (id: number) => new NotFoundException(`Knowledge base ${id} not found`);

/** Every method takes the caller's account first and puts it in the WHERE of every read and write. */
@Injectable()
export class KnowledgeBasesService {
  constructor(
    @InjectRepository(KnowledgeBase) private readonly knowledgeBases: Repository<KnowledgeBase>,
    @InjectRepository(KnowledgeBaseSource) private readonly sources: Repository<KnowledgeBaseSource>,
  ) {}

  list(accountId: number): Promise<KnowledgeBase[]> {
    return this.knowledgeBases.find({ where: { accountId }, order: { id: 'ASC' } });
  }

  async get(accountId: number, id: number): Promise<KnowledgeBase> {
    const knowledgeBase = await this.knowledgeBases.findOneBy({ id, accountId });
    if (!knowledgeBase) throw notFound(id);
    return knowledgeBase;
  }

  async getWithSources(accountId: number, id: number): Promise<KnowledgeBase & { sources: KnowledgeBaseSource[] }> {
    const [knowledgeBase, sources] = await Promise.all([this.get(accountId, id), this.listSourcesUnchecked(accountId, id)]);
    return Object.assign(knowledgeBase, { sources });
  }

  async create(accountId: number, dto: CreateKnowledgeBaseDto): Promise<KnowledgeBase> {
    const { id } = await this.knowledgeBases.save(this.knowledgeBases.create({ accountId, name: dto.name }));
    return this.get(accountId, id);
  }

  async remove(accountId: number, id: number): Promise<void> {
    const { affected } = await this.knowledgeBases.delete({ id, accountId });
    if (!affected) throw notFound(id);
  }

  async listSources(accountId: number, knowledgeBaseId: number): Promise<KnowledgeBaseSource[]> {
    const [sources] = await Promise.all([this.listSourcesUnchecked(accountId, knowledgeBaseId), this.get(accountId, knowledgeBaseId)]);
    return sources;
  }

  /**
   * Adds a source in one transaction that locks the knowledge base row (scoped to the account), so that a
   * concurrent delete cannot leave an orphan, and touches the knowledge base's updatedAt.
   */
  addSource(accountId: number, knowledgeBaseId: number, dto: CreateSourceDto): Promise<KnowledgeBaseSource> {
    return this.knowledgeBases.manager.transaction(async (manager) => {
      const { affected } = await manager.update(KnowledgeBase, { id: knowledgeBaseId, accountId }, { updatedAt: () => 'now()' });
      if (!affected) throw notFound(knowledgeBaseId);
      const source = manager.create(KnowledgeBaseSource, { accountId, knowledgeBaseId, name: dto.name, type: dto.type, content: dto.content });
      return manager.save(source);
    });
  }

  async removeSource(accountId: number, knowledgeBaseId: number, sourceId: number): Promise<void> {
    const { affected } = await this.sources.delete({ id: sourceId, knowledgeBaseId, accountId });
    if (!affected) {
      await this.get(accountId, knowledgeBaseId);
      throw new NotFoundException(`Source ${sourceId} not found`);
    }
  }

  private listSourcesUnchecked(accountId: number, knowledgeBaseId: number): Promise<KnowledgeBaseSource[]> {
    return this.sources.find({ where: { accountId, knowledgeBaseId }, order: { id: 'ASC' } });
  }
}
