import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Max, Min } from 'class-validator';
import { IsStorable } from '../../common/storable-text';
import { ToInteger } from '../../common/query-params';
import { CodePointLength, IsOmittable, Trim } from '../../common/validators';
import { MAX_RETRIEVED_PASSAGES, RetrievedPassage } from '../knowledge.service';

/** Query parameters of `GET /knowledge-bases/{kbId}/search`. */
export class SearchQuery {
  /**
   * What to look for (a visitor's question, or a few words), 1–500 characters after trimming, in any script.
   * @example "When are you open on Sunday?"
   */
  @Trim()
  @IsString()
  @IsStorable()
  @CodePointLength(1, 500)
  q: string;

  /** Most passages returned, 1–20. @example 5 */
  @IsOmittable()
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_RETRIEVED_PASSAGES, default: 5 })
  @ToInteger()
  @IsInt()
  @Min(1)
  @Max(MAX_RETRIEVED_PASSAGES)
  limit: number = 5;
}

export class SearchResultResponse {
  /** The source the passage comes from. @example 7 */
  @ApiProperty({ type: 'integer' })
  sourceId: number;
  /** @example "Opening hours" */
  sourceName: string;
  /** The passage: about 1,000 characters of the source's text, cut at paragraph and sentence boundaries. @example "We are open 9:00–18:00, Monday to Saturday. On Sundays the shop is closed." */
  text: string;
  /**
   * Relevance, higher is better (BM25: the matched words' rarity in the account's knowledge, each word counted
   * once per passage, adjusted for the passage's length). Compares passages of the account, not across accounts.
   * @example 4.82
   */
  score: number;
}

export function toSearchResultResponse(passage: RetrievedPassage): SearchResultResponse {
  return {
    sourceId: passage.sourceId,
    sourceName: passage.sourceName,
    text: passage.text,
    score: Math.round(passage.score * 10_000) / 10_000,
  };
}
