import { Injectable } from '@nestjs/common';
import { AnsweringAgent } from '../../agents/agents.repository';
import { KnowledgeService } from '../../knowledge-bases/knowledge.service';

/** A passage of a knowledge base that matches a visitor's message. */
export interface Passage {
  sourceName: string;
  text: string;
  /** Higher is better. */
  score: number;
}

/**
 * Where the passages of an agent's knowledge bases come from, for one visitor message: best first, at most
 * `limit`. Conversations depend on this small interface only, not on how knowledge is stored and searched.
 */
export abstract class PassageFinder {
  abstract find(accountId: number, agent: AnsweringAgent, query: string, limit: number): Promise<Passage[]>;
}

/** The agent's knowledge bases searched by KnowledgeService (BM25 over their ready sources' passages). */
@Injectable()
export class KnowledgePassageFinder extends PassageFinder {
  constructor(private readonly knowledge: KnowledgeService) {
    super();
  }

  async find(accountId: number, agent: AnsweringAgent, query: string, limit: number): Promise<Passage[]> {
    if (agent.knowledgeBaseIds.length === 0) return [];
    const passages = await this.knowledge.retrieve(accountId, agent.knowledgeBaseIds, query, limit);
    return passages.map(({ sourceName, text, score }) => ({ sourceName, text, score }));
  }
}
