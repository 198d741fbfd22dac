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
  /**
   * A text source's text; a url source's URL (its fetched text is searchable, not returned); a file source's
   * extracted text once it is `ready` (its first 500,000 characters, which are what is indexed), "" before.
   * @example "We are open 9:00–18:00, Monday to Saturday."
   */
  content: string;
  /**
   * `ready`: searchable; `pending`: being indexed (a url source is fetched, a file source's file read, in the
   * background: poll until it is `ready` or `failed`); `failed`: see `error`. Text sources are `ready` at once.
   */
  @ApiProperty({ enum: SOURCE_STATUSES, example: 'ready' })
  status: SourceStatus;
  /** Why the last fetch or reading failed when `failed`, in words for the source's owner; otherwise "". @example "" */
  error: string;
  /** A file source's file name as uploaded (its last path segment, cleaned); "" for other types. @example "" */
  fileName: string;
  /**
   * A file source's type, as its content showed it: `application/pdf`, `application/vnd.openxmlformats-officedocument.wordprocessingml.document`,
   * `text/html`, `text/csv`, `text/markdown` or `text/plain`; "" for other types. @example ""
   */
  contentType: string;
  /** A file source's size in bytes; 0 for other types. @example 0 */
  @ApiProperty({ type: 'integer' })
  bytes: number;
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
    fileName: source.fileName,
    contentType: source.contentType,
    bytes: source.bytes,
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
