import { Injectable } from '@nestjs/common';
import { KnowledgeBasesRepository, PassageMatch, WeightedToken } from './knowledge-bases.repository';
import { distinctSearchTokens } from './search-tokens';

/** A passage retrieved for a question: the source it comes from, its text, and how well it matches (higher is better). */
export type RetrievedPassage = PassageMatch;

/** The most passages one retrieval returns. */
export const MAX_RETRIEVED_PASSAGES = 20;

/**
 * Query tokens looked up, at most: the rarest first (a 500-character Chinese question has hundreds of bigrams,
 * and the rarest carry the information).
 */
const MAX_QUERY_TOKENS = 16;
/**
 * The most passages one search visits: each match costs a visit to its row (about 3 µs), so this bounds a
 * search at about 10 ms whatever the corpus. Past the rarest token, further tokens are looked up only while the
 * passages they match, summed, stay within it: a token found in thousands of passages ("the", "है", "的") adds
 * almost nothing to the ranking (its weight is near 0). When even the rarest token of the question is that
 * common, only this many of its passages are considered.
 */
export const MATCH_BUDGET = 2_000;

/**
 * Retrieval over the passages of knowledge bases: the search route's, and what the conversations feed the
 * agent.
 */
@Injectable()
export class KnowledgeService {
  constructor(private readonly repository: KnowledgeBasesRepository) {}

  /**
   * The passages of these knowledge bases (of the account; ids of other accounts' match nothing) that best
   * match `query`, best first, at most `limit` (1–20). Only `ready` sources have passages.
   *
   * Matching: the query is cut into the same tokens as the passages (src/knowledge-bases/search-tokens.ts:
   * words in every script, CJK as character bigrams); a passage is returned only if it shares at least one
   * of the query's tokens that was looked up (the rarest ones; see MATCH_BUDGET), so a question that shares
   * nothing with the knowledge base gets `[]`.
   *
   * `score`: BM25 over the account's passages with each token counted once per passage: the sum of the
   * matched tokens' inverse document frequencies (rare tokens weigh more), scaled down for long passages.
   * Comparable between the passages of one query (and across the queries of one account), not an absolute
   * scale; always > 0.
   */
  async retrieve(accountId: number, knowledgeBaseIds: number[], query: string, limit: number): Promise<RetrievedPassage[]> {
    const tokens = distinctSearchTokens(query);
    if (tokens.length === 0 || knowledgeBaseIds.length === 0) return [];
    const statistics = await this.repository.corpusStatistics(accountId, tokens);
    if (!statistics) return [];
    const terms = weightedTerms(tokens, statistics.documentFrequencies, statistics.passages);
    if (terms.length === 0) return [];
    const averageTokens = Math.max(statistics.tokens / statistics.passages, 1);
    return this.repository.searchPassages(accountId, knowledgeBaseIds, terms, averageTokens, Math.min(Math.max(limit, 1), MAX_RETRIEVED_PASSAGES), MATCH_BUDGET);
  }
}

/** The tokens to look up, rarest first, weighted by BM25's inverse document frequency (always > 0). */
export function weightedTerms(tokens: string[], documentFrequencies: Map<string, number>, passages: number): WeightedToken[] {
  const found = tokens
    .map((token) => ({ token, frequency: documentFrequencies.get(token) ?? 0 }))
    .filter(({ frequency }) => frequency > 0)
    .sort((a, b) => a.frequency - b.frequency || (a.token < b.token ? -1 : 1));
  const chosen: WeightedToken[] = [];
  let matches = 0;
  for (const { token, frequency } of found) {
    if (chosen.length === MAX_QUERY_TOKENS || (chosen.length > 0 && matches + frequency > MATCH_BUDGET)) break;
    matches += frequency;
    chosen.push({ token, weight: Math.log(1 + (passages - frequency + 0.5) / (frequency + 0.5)) });
  }
  return chosen;
}
