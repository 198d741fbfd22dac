import { Injectable } from '@nestjs/common';
import { AgentRow } from '../../agents/agents.repository';

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
  abstract find(accountId: number, agent: AgentRow, query: string, limit: number): Promise<Passage[]>;
}

/** Until knowledge bases can be searched: no passages (the built-in answerer then notes the question). */
@Injectable()
export class NoPassageFinder extends PassageFinder {
  async find(): Promise<Passage[]> {
    return [];
  }
}
