import { KnowledgeBaseSource } from '../knowledge-base-source.entity';
import { KnowledgeBase } from '../knowledge-base.entity';

export class SourceResponse {
  /** @example 7 */
  id: number;
  /** @example 3 */
  knowledgeBaseId: number;
  /** @example "Opening hours" */
  name: string;
  /** @example "text" */
  type: 'text' | 'url';
  /** @example "We are open 9:00–18:00, Monday to Saturday." */
  content: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  createdAt: string;
}

export class KnowledgeBaseResponse {
  /** @example 3 */
  id: number;
  /** @example "Product FAQ" */
  name: string;
  /** How many sources the knowledge base holds. @example 2 */
  sourceCount: number;
  /** @example "2026-11-22T09:15:02.123Z" */
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  updatedAt: string;
}

export class KnowledgeBaseWithSourcesResponse extends KnowledgeBaseResponse {
  /** Every source, by id. */
  sources: SourceResponse[];
}

export function toSourceResponse(source: KnowledgeBaseSource): SourceResponse {
  return {
    id: source.id,
    knowledgeBaseId: source.knowledgeBaseId,
    name: source.name,
    type: source.type,
    content: source.content,
    createdAt: source.createdAt.toISOString(),
  };
}

export function toKnowledgeBaseResponse(knowledgeBase: KnowledgeBase): KnowledgeBaseResponse {
  return {
    id: knowledgeBase.id,
    name: knowledgeBase.name,
    sourceCount: knowledgeBase.sourceCount,
    createdAt: knowledgeBase.createdAt.toISOString(),
    updatedAt: knowledgeBase.updatedAt.toISOString(),
  };
}

export function toKnowledgeBaseWithSourcesResponse(
  value: KnowledgeBase & { sources: KnowledgeBaseSource[] },
): KnowledgeBaseWithSourcesResponse {
  return { ...toKnowledgeBaseResponse(value), sources: value.sources.map(toSourceResponse) };
}
