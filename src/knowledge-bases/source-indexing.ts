import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { codePointLength } from '../common/code-points';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import type { TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { Resolver } from '../outbound/outbound-http';
import { MAX_TEXT_CONTENT_LENGTH } from './dto/create-source.dto';
import { IndexingOutcome, KnowledgeBasesRepository, NewPassage } from './knowledge-bases.repository';
import { splitIntoPassages } from './passages';
import { distinctSearchTokens } from './search-tokens';
import { fetchUrlSourceText, UrlSourceError } from './url-source';

/** The job that gives a pending source its passages (fetching a url source first). Its data: ids only. */
export const INDEX_SOURCE_JOB = 'knowledge.index-source';
/** The job that resends INDEX_SOURCE_JOB for every pending source (see sweep). */
const SWEEP_JOB = 'knowledge.sweep-pending-sources';

export interface IndexSourceJob {
  accountId: number;
  sourceId: number;
}

/**
 * The passages of a text, with their search tokens: at most MAX_TEXT_CONTENT_LENGTH characters are indexed
 * (a text source cannot be longer; a fetched page can, and its text is cut at a passage boundary), and a
 * passage without a single token (punctuation only) is left out, since nothing could find it.
 */
export function toPassages(text: string): NewPassage[] {
  const passages: NewPassage[] = [];
  let length = 0;
  for (const passage of splitIntoPassages(text)) {
    length += codePointLength(passage);
    if (length > MAX_TEXT_CONTENT_LENGTH) break;
    const tokens = distinctSearchTokens(passage);
    if (tokens.length) passages.push({ text: passage, tokens });
  }
  return passages;
}

/**
 * Indexing in the background, on the job queue (durable: any instance runs a job, a restart resumes it):
 * a pending url source is fetched and its text indexed; a pending text source (only those that existed
 * before passages did: new text sources are indexed when created) is indexed. The result is stored only if
 * the source is still pending at the revision the job started from.
 *
 * Jobs are keyed by source: at most one waits per source (a queue of policy `short`), so the sweep and a
 * refresh never pile up duplicates. The sweep (every 5 minutes) resends the job of every pending source,
 * which covers the sources the migration left pending and a job whose retries ran out (the database was
 * down, say).
 */
@Injectable()
export class SourceIndexing implements OnModuleInit {
  private readonly logger = new Logger(SourceIndexing.name);
  /** Tests only: how url sources' names are resolved. */
  resolver: Resolver | undefined;

  constructor(
    private readonly jobs: Jobs,
    private readonly repository: KnowledgeBasesRepository,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.jobs.define<IndexSourceJob>({
      name: INDEX_SOURCE_JOB,
      handler: (job) => this.index(job),
      policy: 'short',
      concurrency: 4,
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      // The fetch (15 s) and the extraction (20 s at most) with room to spare.
      expireInSeconds: 120,
    });
    this.jobs.define({ name: SWEEP_JOB, handler: () => this.sweep(), cron: '*/5 * * * *', retryLimit: 0, expireInSeconds: 60 });
  }

  /** Queues the indexing of a source, in the transaction that made it pending when `sql` is given. */
  send(job: IndexSourceJob, sql?: TransactionSql): Promise<void> {
    return this.jobs.send(INDEX_SOURCE_JOB, job, { sql, singletonKey: String(job.sourceId) });
  }

  async index({ accountId, sourceId }: IndexSourceJob): Promise<void> {
    const source = await this.repository.getSourceToIndex(accountId, sourceId);
    if (!source || source.status !== 'pending') return;
    const outcome: IndexingOutcome =
      source.type === 'text' ? { passages: toPassages(source.content) } : await this.fetchPassages(source.content);
    const stored = await this.repository.finishIndexing(accountId, sourceId, source.revision, outcome);
    this.logger.log({ sourceId, stored, outcome: 'error' in outcome ? 'failed' : 'ready' }, 'Source indexed');
  }

  private async fetchPassages(url: string): Promise<IndexingOutcome> {
    const policy = { allowPrivateAddresses: this.config.fetchAllowPrivateAddresses };
    try {
      const passages = toPassages(await fetchUrlSourceText(url, { policy, resolver: this.resolver }));
      return passages.length ? { passages } : { error: 'The page has no readable text' };
    } catch (error) {
      // A UrlSourceError is the customer's to read; anything else is ours, and the job is retried.
      if (error instanceof UrlSourceError) return { error: error.message.slice(0, 500) };
      throw error;
    }
  }

  private async sweep(): Promise<void> {
    for (const job of await this.repository.pendingSources()) await this.send(job);
  }
}
