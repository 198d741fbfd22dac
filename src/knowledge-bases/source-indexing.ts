import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import type { TransactionSql } from '../database/database';
import { Jobs } from '../jobs/jobs.service';
import { Resolver } from '../outbound/outbound-http';
import { FileReader } from './file-reader';
import { CONTENT_TYPES, FileKind } from './file-type';
import { toPassages } from './indexed-passages';
import type { SourceType } from './knowledge-base-source.entity';
import { IndexingOutcome, KnowledgeBasesRepository } from './knowledge-bases.repository';
import { fetchUrlSourceText, UrlSourceError } from './url-source';

/** The job that gives a pending text or url source its passages (fetching a url source first). Its data: ids only. */
export const INDEX_SOURCE_JOB = 'knowledge.index-source';
/** The job that reads a pending file source's file and gives the source its text and passages. Its data: ids only. */
export const READ_FILE_JOB = 'knowledge.read-file';
/** The job that resends INDEX_SOURCE_JOB for every pending source (see sweep). */
const SWEEP_JOB = 'knowledge.sweep-pending-sources';

export interface IndexSourceJob {
  accountId: number;
  sourceId: number;
}

/** An upload still without a source this long after its request could have ended was left by a stopped process. */
const UNFINISHED_UPLOAD_GRACE_MS = 3600 * 1000;

const FILE_KINDS = new Map(Object.entries(CONTENT_TYPES).map(([kind, contentType]) => [contentType, kind as FileKind]));

/**
 * Indexing in the background, on the job queue (durable: any instance runs a job, a restart resumes it):
 * a pending url source is fetched and its text indexed; a pending file source's file is read (in a process of
 * its own: file-reader.ts) and its text indexed; a pending text source (only those that existed before passages did:
 * new text sources are indexed when created) is indexed. The result is stored only if the source is still
 * pending at the revision the job started from.
 *
 * Jobs are keyed by source: at most one waits per source (queues of policy `short`), so the sweep and a
 * refresh never pile up duplicates. Files have a queue of their own, whose workers (KNOWLEDGE_EXTRACTION_WORKERS
 * on each instance) read one file each at a time: however many are uploaded, that many threads read files, and the
 * queue is shared fairly between accounts (queueReading).
 * The sweep (every 5 minutes) resends the job of every pending source, which covers the sources the migration
 * left pending and a job whose retries ran out (the database was down, say), and deletes the uploads a stopped
 * process left unfinished.
 */
@Injectable()
export class SourceIndexing implements OnModuleInit {
  private readonly logger = new Logger(SourceIndexing.name);
  /** Tests only: how url sources' names are resolved. */
  resolver: Resolver | undefined;

  constructor(
    private readonly jobs: Jobs,
    private readonly repository: KnowledgeBasesRepository,
    private readonly fileReader: FileReader,
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
    const files = this.config.knowledgeFiles;
    this.jobs.define<IndexSourceJob>({
      name: READ_FILE_JOB,
      handler: (job) => this.readFile(job),
      policy: 'short',
      workers: files.extractionWorkers,
      concurrency: 1,
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      // The reading's own deadline, with room for reading the file from the database and storing the passages.
      expireInSeconds: Math.ceil(files.extractionTimeoutMs / 1000) + 120,
    });
    this.jobs.define({ name: SWEEP_JOB, handler: () => this.sweep(), cron: '*/5 * * * *', retryLimit: 0, expireInSeconds: 60 });
  }

  /** Queues the indexing of a source of this type, in the transaction that made it pending when `sql` is given. */
  async send(job: IndexSourceJob, type: SourceType, sql?: TransactionSql): Promise<void> {
    if (type !== 'file') return this.jobs.send(INDEX_SOURCE_JOB, job, { sql, singletonKey: String(job.sourceId) });
    await this.queueReading(job, await this.repository.pendingFilesBefore(job.accountId, job.sourceId, sql), sql);
  }

  /**
   * Queues the reading of a file source, fairly: readings are fetched by round, then by age, a file's round being
   * how many of its account's files wait before it (its job's priority is minus that). Every account's first waiting
   * file is read before any account's second, so an account that uploads many slow files holds up another's only by
   * the files being read when that one's arrives. (The round is set when the job is queued: a file queued behind
   * many of its account's keeps its round as those are read.)
   */
  private queueReading(job: IndexSourceJob, round: number, sql?: TransactionSql): Promise<void> {
    return this.jobs.send(READ_FILE_JOB, job, { sql, singletonKey: String(job.sourceId), priority: -round });
  }

  async index({ accountId, sourceId }: IndexSourceJob): Promise<void> {
    const source = await this.repository.getSourceToIndex(accountId, sourceId);
    if (!source || source.status !== 'pending' || source.type === 'file') return;
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

  /** Reads a pending file source's file (in the file reading process: FileReader); stores its text and passages, or why not. */
  async readFile({ accountId, sourceId }: IndexSourceJob): Promise<void> {
    const source = await this.repository.getSourceToIndex(accountId, sourceId);
    if (!source || source.status !== 'pending' || source.type !== 'file') return;
    const started = Date.now();
    const kind = FILE_KINDS.get(source.contentType);
    const parts = await this.storedFile(accountId, sourceId);
    const { extractionTimeoutMs: timeoutMs, extractionMemoryMb: memoryMb } = this.config.knowledgeFiles;
    const result =
      kind && parts.length ? await this.fileReader.read(parts, kind, { timeoutMs, memoryMb }) : { error: 'The file is no longer stored' };
    // Only the error's name or code: its message may quote the file.
    if ('crash' in result) this.logger.warn({ sourceId, kind, crash: result.crash }, 'Reading a file failed unexpectedly');
    const outcome: IndexingOutcome =
      'reading' in result ? { passages: result.reading.passages, content: result.reading.content } : { error: result.error.slice(0, 500) };
    const stored = await this.repository.finishIndexing(accountId, sourceId, source.revision, outcome);
    const bytes = parts.reduce((sum, part) => sum + part.length, 0);
    this.logger.log(
      { sourceId, kind, bytes, ms: Date.now() - started, stored, outcome: 'error' in outcome ? 'failed' : 'ready' },
      'File source read',
    );
  }

  /** A file source's file, in the pieces it is stored in (none when it is gone). */
  private async storedFile(accountId: number, sourceId: number): Promise<Buffer[]> {
    const parts: Buffer[] = [];
    for (let part = await this.repository.readFileChunk(accountId, sourceId, 0); part;) {
      parts.push(part);
      part = await this.repository.readFileChunk(accountId, sourceId, parts.length);
    }
    return parts;
  }

  private async sweep(): Promise<void> {
    // In the order of their ids: each file's round is how many of its account's are listed before it.
    const rounds = new Map<number, number>();
    for (const { accountId, sourceId, type } of await this.repository.pendingSources()) {
      if (type !== 'file') await this.send({ accountId, sourceId }, type);
      else {
        const round = rounds.get(accountId) ?? 0;
        rounds.set(accountId, round + 1);
        await this.queueReading({ accountId, sourceId }, round);
      }
    }
    // An upload's request ends within the request bound (HTTP_REQUEST_TIMEOUT_MS: the upload bound is the recordings').
    const before = new Date(Date.now() - this.config.httpRequestTimeoutMs - UNFINISHED_UPLOAD_GRACE_MS);
    const removed = await this.repository.deleteUnfinishedUploads(before);
    if (removed) this.logger.log({ pieces: removed }, 'Unfinished uploads removed');
  }
}
