import { ApiProperty } from '@nestjs/swagger';
import { ApiDateTime } from '../../common/api-formats';
import { SOURCE_STATUSES, SOURCE_TYPES, SourceStatus, SourceType } from '../knowledge-base-source.entity';
import { KnowledgeBaseRow, SourceRow } from '../knowledge-bases.repository';

export class SourceResponse {
  /** @example 7 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example 3 */
  @ApiProperty({ type: 'integer' })
  knowledgeBaseId: number;
  /** @example "Opening hours" */
  name: string;
  @ApiProperty({ enum: SOURCE_TYPES, example: 'text' })
  type: SourceType;
  /** A text source's text; a url source's URL (its fetched text is searchable, not returned). @example "We are open 9:00–18:00, Monday to Saturday." */
  content: string;
  /**
   * `ready`: searchable; `pending`: being indexed (a url source is fetched in the background: poll until it
   * is `ready` or `failed`); `failed`: see `error`. Text sources are `ready` at once.
   */
  @ApiProperty({ enum: SOURCE_STATUSES, example: 'ready' })
  status: SourceStatus;
  /** Why the last fetch failed when `failed`; otherwise "". @example "" */
  error: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
}

export class KnowledgeBaseResponse {
  /** @example 3 */
  @ApiProperty({ type: 'integer' })
  id: number;
  /** @example "Product FAQ" */
  name: string;
  /** How many sources the knowledge base holds. @example 2 */
  @ApiProperty({ type: 'integer' })
  sourceCount: number;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  createdAt: string;
  /** @example "2026-11-22T09:15:02.123Z" */
  @ApiDateTime()
  updatedAt: string;
}

export class KnowledgeBaseWithSourcesResponse extends KnowledgeBaseResponse {
  /** Every source, by id. */
  sources: SourceResponse[];
}

export function toSourceResponse(source: SourceRow): SourceResponse {
  return {
    id: source.id,
    knowledgeBaseId: source.knowledgeBaseId,
    name: source.name,
    type: source.type,
    content: source.content,
    status: source.status,
    error: source.error,
    createdAt: source.createdAt.toISOString(),
  };
}

export function toKnowledgeBaseResponse(knowledgeBase: KnowledgeBaseRow): KnowledgeBaseResponse {
  return {
    id: knowledgeBase.id,
    name: knowledgeBase.name,
    sourceCount: knowledgeBase.sourceCount,
    createdAt: knowledgeBase.createdAt.toISOString(),
    updatedAt: knowledgeBase.updatedAt.toISOString(),
  };
}

/** A knowledge base and its sources, as KnowledgeBasesService.getWithSources reads them. */
export interface KnowledgeBaseWithSources {
  knowledgeBase: KnowledgeBaseRow;
  sources: SourceRow[];
}

export function toKnowledgeBaseWithSourcesResponse({ knowledgeBase, sources }: KnowledgeBaseWithSources): KnowledgeBaseWithSourcesResponse {
  return { ...toKnowledgeBaseResponse(knowledgeBase), sources: sources.map(toSourceResponse) };
}
