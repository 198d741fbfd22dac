import { Injectable } from '@nestjs/common';
import { MAX_INT_ID } from '../common/id.pipes';
import { KnowledgeBasesRepository, PassageMatch, SearchPlan } from './knowledge-bases.repository';
import { distinctSearchTokens } from './search-tokens';

/** A passage retrieved for a question: the source it comes from, its text, and how well it matches (higher is better). */
export type RetrievedPassage = PassageMatch;

/** The most passages one retrieval returns. */
export const MAX_RETRIEVED_PASSAGES = 20;

/** Query tokens a search uses, at most: the rarest (a 500-character Chinese question has hundreds of bigrams). */
const MAX_QUERY_TOKENS = 16;
/**
 * The most passages one search visits to find its candidates: each costs a visit to its row, so this bounds a
 * search whatever the corpus. The rarest token of the question is always looked up
 * (at most this many of its passages); the next rarest only while the passages they match, summed, stay within
 * it. Candidates are then scored on every token of the question, so a common token ("the", "है", "的") still
 * counts in the score without costing a visit to each of its thousands of passages.
 */
export const MATCH_BUDGET = 1_000;

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
   * words in every script, English stems, CJK as character bigrams). Candidates are the passages that
   * contain the query's rarest tokens (see MATCH_BUDGET), so a question that shares nothing with the
   * knowledge base gets `[]`; a passage that shares only very common words with a question that also has
   * rarer ones is not a candidate.
   *
   * `score`: BM25 over the account's passages on all the query's tokens (at most its 16 rarest), each
   * counted once per passage: the sum of the inverse document frequencies of the tokens the passage contains
   * (rare tokens weigh more), scaled down for long passages. Comparable between the passages of one query
   * (and across the queries of one account), not an absolute scale; always > 0.
   */
  async retrieve(accountId: number, knowledgeBaseIds: number[], query: string, limit: number): Promise<RetrievedPassage[]> {
    const tokens = distinctSearchTokens(query);
    // Ids that cannot be knowledge bases (not PostgreSQL integers) match nothing, rather than failing the query.
    const ids = knowledgeBaseIds.filter((id) => Number.isInteger(id) && id > 0 && id <= MAX_INT_ID);
    if (tokens.length === 0 || ids.length === 0) return [];
    const statistics = await this.repository.corpusStatistics(accountId, tokens);
    if (!statistics) return [];
    const plan = searchPlan(tokens, statistics.documentFrequencies, statistics.passages);
    if (plan.terms.length === 0) return [];
    const averageTokens = Math.max(statistics.tokens / statistics.passages, 1);
    return this.repository.searchPassages(
      accountId,
      ids,
      plan,
      averageTokens,
      Math.min(Math.max(limit, 1), MAX_RETRIEVED_PASSAGES),
      MATCH_BUDGET,
    );
  }
}

/**
 * The query's tokens that occur in the account's passages (at most MAX_QUERY_TOKENS, the rarest), rarest first,
 * weighted by BM25's inverse document frequency (always > 0), and how many of the first are looked up in the
 * index (MATCH_BUDGET).
 */
export function searchPlan(
  tokens: string[],
  documentFrequencies: Map<string, number>,
  passages: number,
  budget = MATCH_BUDGET,
): SearchPlan {
  const found = tokens
    .map((token) => ({ token, frequency: documentFrequencies.get(token) ?? 0 }))
    .filter(({ frequency }) => frequency > 0)
    .sort((a, b) => a.frequency - b.frequency || (a.token < b.token ? -1 : 1))
    .slice(0, MAX_QUERY_TOKENS);
  let lookUp = 0;
  for (let matches = 0; lookUp < found.length && (lookUp === 0 || matches + found[lookUp].frequency <= budget); lookUp++)
    matches += found[lookUp].frequency;
  const terms = found.map(({ token, frequency }) => ({ token, weight: Math.log(1 + (passages - frequency + 0.5) / (frequency + 0.5)) }));
  return { terms, lookUp };
}
