import { Injectable } from '@nestjs/common';
import { Database, Sql } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import { SourceStatus, SourceType } from './knowledge-base-source.entity';

/** A knowledge base as the API shows it. */
export interface KnowledgeBaseRow {
  id: number;
  name: string;
  sourceCount: number;
  createdAt: Date;
  updatedAt: Date;
}

/** A source as the API shows it. */
export interface SourceRow {
  id: number;
  knowledgeBaseId: number;
  name: string;
  type: SourceType;
  content: string;
  status: SourceStatus;
  error: string;
  /** A file source's file: its name as kept, its type and its size (`""` and 0 for other types). */
  fileName: string;
  contentType: string;
  bytes: number;
  createdAt: Date;
}

export type NewSource = Pick<SourceRow, 'name' | 'type' | 'content' | 'status'> &
  Partial<Pick<SourceRow, 'fileName' | 'contentType' | 'bytes'>>;

/** What an indexing job reads: the source, and the revision its result must still match when stored. */
export interface SourceToIndex {
  knowledgeBaseId: number;
  type: SourceType;
  content: string;
  /** A file source's type, which tells how its file is read. */
  contentType: string;
  status: SourceStatus;
  revision: number;
}

/** A passage to store: its text and its distinct search tokens. */
export interface NewPassage {
  text: string;
  /**
   * Its distinct search tokens, or the same already joined by spaces (as a file's reading sends them: far cheaper
   * to pass between threads). A token never holds a space: it is a run of letters, marks and digits.
   */
  tokens: string[] | string;
}

/** The result of indexing a source: its passages (it becomes `ready`; a file source with its text as `content`), or why it failed. */
export type IndexingOutcome = { passages: NewPassage[]; content?: string } | { error: string };

/** What ranking needs to know about the account's corpus and the query's tokens. */
export interface CorpusStatistics {
  /** Passages of the account. */
  passages: number;
  /** Their distinct tokens, summed (so the average passage length is tokens / passages). */
  tokens: number;
  /** In how many passages each token of the query occurs (absent: none). */
  documentFrequencies: Map<string, number>;
}

/** One search term: a token and its weight (inverse document frequency). */
export interface WeightedToken {
  token: string;
  weight: number;
}

/** The tokens of a query, rarest first, and how many of the first ones are looked up in the index (see searchPassages). */
export interface SearchPlan {
  terms: WeightedToken[];
  lookUp: number;
}

/** A passage found by search, best first. */
export interface PassageMatch {
  sourceId: number;
  sourceName: string;
  text: string;
  score: number;
}

/** A source that waits for its indexing job (the sweep's work list: the ids the job's data holds, and the type that picks the job). */
export interface PendingSource {
  accountId: number;
  sourceId: number;
  type: SourceType;
}

const KNOWLEDGE_BASE_COLUMNS = `kb.id, kb.name, kb.created_at AS "createdAt", kb.updated_at AS "updatedAt",
  (SELECT count(*) FROM knowledge_base_sources s WHERE s.account_id = kb.account_id AND s.knowledge_base_id = kb.id)::int AS "sourceCount"`;
const SOURCE_COLUMNS = `id, knowledge_base_id AS "knowledgeBaseId", name, type, content, status, error,
  file_name AS "fileName", content_type AS "contentType", bytes, created_at AS "createdAt"`;

/** BM25's constants (the usual ones): how fast a repeated match saturates, and how much length counts. */
const BM25_K1 = 1.2;
const BM25_B = 0.75;
/** Passages scored on every token of the query (step 2 of searchPassages): enough for the largest limit (20), with room. */
const CANDIDATES = 50;

const EXAMPLE_PASSAGES: NewPassage[] = [{ text: 'We are open from 9:00 to 18:00.', tokens: 'we are open from 9 00 to 18' }];

/**
 * Every query of the knowledge bases, their sources and passages, and the search over them. Each method takes
 * the account id first and puts it in the WHERE of every statement.
 */
@Injectable()
export class KnowledgeBasesRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1])
  listKnowledgeBases(accountId: number): Promise<KnowledgeBaseRow[]> {
    return this.db.query<KnowledgeBaseRow>(
      `SELECT ${KNOWLEDGE_BASE_COLUMNS} FROM knowledge_bases kb WHERE kb.account_id = $1 ORDER BY kb.id`,
      [accountId],
    );
  }

  @AccountQuery([1, 2])
  async getKnowledgeBase(accountId: number, id: number): Promise<KnowledgeBaseRow | undefined> {
    const [row] = await this.db.query<KnowledgeBaseRow>(
      `SELECT ${KNOWLEDGE_BASE_COLUMNS} FROM knowledge_bases kb WHERE kb.account_id = $1 AND kb.id = $2`,
      [accountId, id],
    );
    return row;
  }

  @AccountQuery([1, 'Product FAQ'])
  async insertKnowledgeBase(accountId: number, name: string): Promise<KnowledgeBaseRow> {
    const [row] = await this.db.query<KnowledgeBaseRow>(
      `INSERT INTO knowledge_bases (account_id, name) VALUES ($1, $2) RETURNING id, name, created_at AS "createdAt", updated_at AS "updatedAt", 0 AS "sourceCount"`,
      [accountId, name],
    );
    return row;
  }

  /** Whether it existed. Its sources and their passages go with it, and agents lose it (foreign keys, ON DELETE CASCADE). */
  @AccountQuery([1, 2])
  async deleteKnowledgeBase(accountId: number, id: number): Promise<boolean> {
    return (await this.db.query(`DELETE FROM knowledge_bases WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id])).length > 0;
  }

  /**
   * Locks the knowledge base (until the transaction ends: a concurrent delete waits, so that a source added
   * meanwhile cannot be orphaned) and touches its updatedAt. Whether it exists.
   */
  @AccountQuery([1, 2])
  async touchKnowledgeBase(accountId: number, id: number, sql: Sql = this.db): Promise<boolean> {
    return (
      (await sql.query(`UPDATE knowledge_bases SET updated_at = now() WHERE account_id = $1 AND id = $2 RETURNING id`, [accountId, id]))
        .length > 0
    );
  }

  @AccountQuery([1, 2])
  listSources(accountId: number, knowledgeBaseId: number): Promise<SourceRow[]> {
    return this.db.query<SourceRow>(
      `SELECT ${SOURCE_COLUMNS} FROM knowledge_base_sources WHERE account_id = $1 AND knowledge_base_id = $2 ORDER BY id`,
      [accountId, knowledgeBaseId],
    );
  }

  @AccountQuery(
    { name: 'text', params: [1, 2, { name: 'Opening hours', type: 'text', content: 'We are open from 9:00 to 18:00.', status: 'ready' }] },
    {
      name: 'file',
      params: [
        1,
        2,
        {
          name: 'Price list',
          type: 'file',
          content: '',
          status: 'pending',
          fileName: 'prices.pdf',
          contentType: 'application/pdf',
          bytes: 48213,
        },
      ],
    },
  )
  async insertSource(accountId: number, knowledgeBaseId: number, source: NewSource, sql: Sql = this.db): Promise<SourceRow> {
    const [row] = await sql.query<SourceRow>(
      `INSERT INTO knowledge_base_sources (account_id, knowledge_base_id, name, type, content, status, file_name, content_type, bytes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${SOURCE_COLUMNS}`,
      [
        accountId,
        knowledgeBaseId,
        source.name,
        source.type,
        source.content,
        source.status,
        source.fileName ?? '',
        source.contentType ?? '',
        source.bytes ?? 0,
      ],
    );
    return row;
  }

  /** Whether it existed (in that knowledge base). Its passages and its file go with it (ON DELETE CASCADE). */
  @AccountQuery([1, 2, 3])
  async deleteSource(accountId: number, knowledgeBaseId: number, sourceId: number): Promise<boolean> {
    const deleted = await this.db.query(
      `DELETE FROM knowledge_base_sources WHERE account_id = $1 AND knowledge_base_id = $2 AND id = $3 RETURNING id`,
      [accountId, knowledgeBaseId, sourceId],
    );
    return deleted.length > 0;
  }

  /**
   * Starts indexing a url or file source again: `pending`, no error, the next revision, and no passages (a
   * source has passages only while ready); a file source keeps its text until the new one replaces it. The
   * source as it now is; undefined when there is no such source, or it is a text source (`type` tells the
   * caller which, from `getSourceType`).
   */
  @AccountQuery([1, 2, 3])
  async restartSource(accountId: number, knowledgeBaseId: number, sourceId: number, sql: Sql = this.db): Promise<SourceRow | undefined> {
    const [row] = await sql.query<SourceRow>(
      `UPDATE knowledge_base_sources SET status = 'pending', error = '', revision = revision + 1
        WHERE account_id = $1 AND knowledge_base_id = $2 AND id = $3 AND type IN ('url', 'file') RETURNING ${SOURCE_COLUMNS}`,
      [accountId, knowledgeBaseId, sourceId],
    );
    if (row) await sql.query(`DELETE FROM knowledge_passages WHERE account_id = $1 AND source_id = $2`, [accountId, sourceId]);
    return row;
  }

  @AccountQuery([1, 2, 3])
  async getSourceType(accountId: number, knowledgeBaseId: number, sourceId: number): Promise<SourceType | undefined> {
    const [row] = await this.db.query<{ type: SourceType }>(
      `SELECT type FROM knowledge_base_sources WHERE account_id = $1 AND knowledge_base_id = $2 AND id = $3`,
      [accountId, knowledgeBaseId, sourceId],
    );
    return row?.type;
  }

  @AccountQuery([1, 2])
  async getSourceToIndex(accountId: number, sourceId: number): Promise<SourceToIndex | undefined> {
    const [row] = await this.db.query<SourceToIndex>(
      `SELECT knowledge_base_id AS "knowledgeBaseId", type, content, content_type AS "contentType", status, revision
         FROM knowledge_base_sources WHERE account_id = $1 AND id = $2`,
      [accountId, sourceId],
    );
    return row;
  }

  /**
   * Stores the result of indexing a pending source, if it is still pending at `revision` (a refresh since, or
   * a delete, makes this result stale: nothing is written). `ready` with its passages (any old ones replaced,
   * in the same transaction) and, for a file source, its text as `content`; or `failed` with the reason.
   * Whether it was stored.
   */
  @AccountQuery(
    { name: 'ready', params: [1, 2, 0, { passages: EXAMPLE_PASSAGES }] },
    { name: 'ready file', params: [1, 2, 0, { passages: EXAMPLE_PASSAGES, content: 'We are open from 9:00 to 18:00.' }] },
    { name: 'failed', params: [1, 2, 0, { error: 'The page answered 404' }] },
  )
  finishIndexing(accountId: number, sourceId: number, revision: number, outcome: IndexingOutcome): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      const ready = 'passages' in outcome;
      const [source] = await sql.query<{ knowledgeBaseId: number }>(
        `UPDATE knowledge_base_sources SET status = $4, error = $5, content = coalesce($6, content)
          WHERE account_id = $1 AND id = $2 AND revision = $3 AND status = 'pending' RETURNING knowledge_base_id AS "knowledgeBaseId"`,
        [accountId, sourceId, revision, ready ? 'ready' : 'failed', ready ? '' : outcome.error, ready ? (outcome.content ?? null) : null],
      );
      if (!source) return false;
      await sql.query(`DELETE FROM knowledge_passages WHERE account_id = $1 AND source_id = $2`, [accountId, sourceId]);
      if (ready) await this.insertPassages(accountId, source.knowledgeBaseId, sourceId, outcome.passages, sql);
      return true;
    });
  }

  /** Stores a source's passages (positions from 0, in order); the statistics follow by trigger. */
  @AccountQuery([1, 2, 3, EXAMPLE_PASSAGES])
  async insertPassages(
    accountId: number,
    knowledgeBaseId: number,
    sourceId: number,
    passages: NewPassage[],
    sql: Sql = this.db,
  ): Promise<void> {
    if (passages.length === 0) return;
    await sql.query(
      `INSERT INTO knowledge_passages (account_id, knowledge_base_id, source_id, position, text, tokens, token_count)
       SELECT $1, $2, $3, p.position - 1, p.text, array_to_tsvector(string_to_array(p.tokens, ' ')), cardinality(string_to_array(p.tokens, ' '))
         FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS p(text, tokens, position)`,
      [
        accountId,
        knowledgeBaseId,
        sourceId,
        passages.map(({ text }) => text),
        passages.map(({ tokens }) => (typeof tokens === 'string' ? tokens : tokens.join(' '))),
      ],
    );
  }

  /** The account's corpus size and the document frequency of each of these tokens; undefined when it has no passages. */
  @AccountQuery([1, ['opening', 'hours']])
  async corpusStatistics(accountId: number, tokens: string[]): Promise<CorpusStatistics | undefined> {
    const rows = await this.db.query<{ passages: number; tokens: string; token: string | null; frequency: number | null }>(
      `SELECT c.passages, c.tokens, s.token, s.passages AS frequency
         FROM knowledge_corpus c
         LEFT JOIN knowledge_token_stats s ON s.account_id = c.account_id AND s.token = ANY($2::text[])
        WHERE c.account_id = $1 AND c.passages > 0`,
      [accountId, tokens],
    );
    if (rows.length === 0) return undefined;
    const documentFrequencies = new Map(rows.filter((row) => row.token !== null).map((row) => [row.token!, row.frequency!]));
    return { passages: rows[0].passages, tokens: Number(rows[0].tokens), documentFrequencies };
  }

  /**
   * The best passages of these knowledge bases for a query, best first; a passage that contains none of the
   * looked-up tokens is not returned. Two steps, so that only matching rows are visited and a passage's tokens
   * are read back only for a few candidates:
   * 1. each of the query's first `lookUp` tokens (its rarest) is looked up on its own in the GIN index, at most
   *    `maxMatches` passages each; the CANDIDATES passages with the best score on those tokens go on;
   * 2. each candidate is scored on every token of the query: BM25 with each token counted once per passage
   *    (the sum of the weights of the tokens it contains, scaled by its length against `averageTokens`).
   */
  @AccountQuery([
    1,
    [2],
    {
      terms: [
        { token: 'opening', weight: 2.3 },
        { token: 'hour', weight: 1.1 },
      ],
      lookUp: 1,
    },
    120,
    5,
    1000,
  ])
  searchPassages(
    accountId: number,
    knowledgeBaseIds: number[],
    { terms, lookUp }: SearchPlan,
    averageTokens: number,
    limit: number,
    maxMatches: number,
  ): Promise<PassageMatch[]> {
    const lookedUp = terms.slice(0, lookUp);
    const bm25 = (weight: string, length: string) =>
      `${weight} * ${BM25_K1 + 1} / (1 + ${BM25_K1} * (${1 - BM25_B} + ${BM25_B} * ${length} / $7::float8))`;
    return this.db.query<PassageMatch>(
      `WITH looked_up AS (SELECT * FROM unnest($3::tsquery[], $4::float8[]) AS t(query, weight)),
       matches AS (
         SELECT m.id, m.token_count, sum(t.weight) AS weight
           FROM looked_up t
           CROSS JOIN LATERAL (
             SELECT p.id, p.token_count FROM knowledge_passages p
              WHERE p.account_id = $1 AND p.tokens @@ t.query AND p.knowledge_base_id = ANY($2::int[])
              LIMIT $9
           ) m
          GROUP BY m.id, m.token_count
       ),
       candidates AS (SELECT id FROM matches ORDER BY ${bm25('weight', 'token_count')} DESC, id LIMIT ${CANDIDATES}),
       scored AS (
         SELECT p.id, ${bm25('(SELECT sum(q.weight) FROM unnest($5::text[], $6::float8[]) AS q(token, weight) WHERE q.token = ANY(x.tokens))', 'p.token_count')} AS score
           FROM candidates c
           JOIN knowledge_passages p ON p.account_id = $1 AND p.id = c.id
           -- The tokens, read (and decompressed) once per candidate: OFFSET 0 keeps the planner from inlining them into every comparison.
           CROSS JOIN LATERAL (SELECT tsvector_to_array(p.tokens) AS tokens OFFSET 0) x
       ),
       best AS (SELECT id, score FROM scored ORDER BY score DESC, id LIMIT $8)
       SELECT p.source_id AS "sourceId", s.name AS "sourceName", p.text, best.score
         FROM best
         JOIN knowledge_passages p ON p.account_id = $1 AND p.id = best.id
         JOIN knowledge_base_sources s ON s.account_id = $1 AND s.id = p.source_id
        ORDER BY best.score DESC, best.id`,
      [
        accountId,
        knowledgeBaseIds,
        // A token is quoted as a tsquery lexeme (it holds no quote or backslash: letters, marks and digits only).
        lookedUp.map(({ token }) => `'${token}'`),
        lookedUp.map(({ weight }) => weight),
        terms.map(({ token }) => token),
        terms.map(({ weight }) => weight),
        averageTokens,
        limit,
        maxMatches,
      ],
    );
  }

  /**
   * How many of the account's file sources wait to be read before this one (older, and pending): the round of the
   * reading queue its reading goes in (SourceIndexing), so that no account's files hold up another's.
   */
  @AccountQuery([1, 2])
  async pendingFilesBefore(accountId: number, sourceId: number, sql: Sql = this.db): Promise<number> {
    const [row] = await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM knowledge_base_sources WHERE account_id = $1 AND type = 'file' AND status = 'pending' AND id < $2`,
      [accountId, sourceId],
    );
    return row.n;
  }

  /** Every source waiting for indexing, across accounts: the sweep resends their jobs. */
  @UnscopedQuery('the indexing sweep looks for pending sources of every account, to resend their jobs')
  pendingSources(): Promise<PendingSource[]> {
    return this.db.query<PendingSource>(
      `SELECT account_id AS "accountId", id AS "sourceId", type FROM knowledge_base_sources WHERE status = 'pending' ORDER BY id`,
    );
  }

  /** Stores one piece of an upload in progress (its source is attached once the upload is complete: attachFile). */
  @AccountQuery([1, '6f1c0e0a-6b8e-4a52-9d3e-0c7a1f2b3c4d', 0, Buffer.from('%PDF-1.7')])
  async insertFileChunk(accountId: number, fileId: string, position: number, data: Buffer): Promise<void> {
    await this.db.query(`INSERT INTO knowledge_file_chunks (account_id, file_id, position, data) VALUES ($1, $2, $3, $4)`, [
      accountId,
      fileId,
      position,
      data,
    ]);
  }

  /** Gives a complete upload its source, in the transaction that creates the source. Whether the upload was there. */
  @AccountQuery([1, '6f1c0e0a-6b8e-4a52-9d3e-0c7a1f2b3c4d', 2])
  async attachFile(accountId: number, fileId: string, sourceId: number, sql: Sql = this.db): Promise<boolean> {
    const attached = await sql.query(
      `UPDATE knowledge_file_chunks SET source_id = $3 WHERE account_id = $1 AND file_id = $2 AND source_id IS NULL RETURNING position`,
      [accountId, fileId, sourceId],
    );
    return attached.length > 0;
  }

  /** Deletes an upload that has no source (refused, failed, or its request failed); an attached one stays. */
  @AccountQuery([1, '6f1c0e0a-6b8e-4a52-9d3e-0c7a1f2b3c4d'])
  async deleteUnattachedFile(accountId: number, fileId: string): Promise<void> {
    await this.db.query(`DELETE FROM knowledge_file_chunks WHERE account_id = $1 AND file_id = $2 AND source_id IS NULL`, [
      accountId,
      fileId,
    ]);
  }

  /** One piece of a source's file, by position from 0; undefined past its last. */
  @AccountQuery([1, 2, 0])
  async readFileChunk(accountId: number, sourceId: number, position: number): Promise<Buffer | undefined> {
    const [row] = await this.db.query<{ data: Buffer }>(
      `SELECT data FROM knowledge_file_chunks WHERE account_id = $1 AND source_id = $2 AND position = $3`,
      [accountId, sourceId, position],
    );
    return row?.data;
  }

  /** Deletes, across accounts, the pieces of uploads a process left unfinished (no source) before `before`. How many. */
  @UnscopedQuery('the sweep removes the uploads a stopped process left unfinished, whatever their account', [new Date(0)])
  async deleteUnfinishedUploads(before: Date): Promise<number> {
    return (
      await this.db.query(`DELETE FROM knowledge_file_chunks WHERE source_id IS NULL AND created_at < $1 RETURNING position`, [before])
    ).length;
  }
}
