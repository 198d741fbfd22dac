import { Injectable, Logger, NotFoundException, OnModuleInit } from '@nestjs/common';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConversationCalls } from '../../conversations/conversation-calls.service';
import { TransactionSql } from '../../database/database';
import { Jobs, NotYet } from '../../jobs/jobs.service';
import { newRecordingKey, RecordingStorage } from '../../recordings/recording-storage';
import { RecordingsService } from '../../recordings/recordings.service';
import { RecordingSegmentsRepository, SegmentRow } from './recording-segments.repository';

export const JOB_ASSEMBLE = 'voice.assemble-recording';

interface ConversationRef {
  accountId: number;
  conversationId: string;
}

/** Thrown while a voice socket still writes its part: the job is retried later (not a failure in the logs). */
class SocketStillOpen extends NotYet {
  constructor() {
    super('A voice socket still holds the conversation; its part of the recording is not stored yet');
  }
}

/** Thrown in the swap's transaction when another run took the parts first: the swap is rolled back. */
class PartsTaken extends Error {}

/**
 * A spoken call's recording, joined from its sockets' parts once the conversation has ended and no socket is
 * left (a durable job: any instance, retried while a socket still writes). MP3 frames of one encoding
 * concatenate, so the parts are streamed one after the other into one object, which becomes the call's
 * recording as an upload would (`hasRecording`, `call.recording.ready`); the parts' rows go in the same
 * transaction, their objects after it. A conversation that ended without a call keeps no audio. Runs of one
 * conversation are idempotent: the one that takes the parts' rows commits, the others roll back and remove what
 * they wrote.
 */
@Injectable()
export class RecordingAssembly implements OnModuleInit {
  private readonly logger = new Logger('Voice');

  constructor(
    private readonly jobs: Jobs,
    private readonly segments: RecordingSegmentsRepository,
    private readonly storage: RecordingStorage,
    private readonly recordings: RecordingsService,
    private readonly calls: ConversationCalls,
  ) {}

  onModuleInit(): void {
    this.jobs.define<ConversationRef>({
      name: JOB_ASSEMBLE,
      handler: ({ accountId, conversationId }) => this.assemble(accountId, conversationId),
      concurrency: 2,
      // A closing socket stores its part within seconds; one whose instance died lets its lease run out within a
      // minute: the doubling retries (2 s, 4 s, ...) cover both.
      retryLimit: 12,
      retryDelay: 2,
      retryBackoff: true,
      expireInSeconds: 600,
      policy: 'short',
    });
    this.calls.whenEnded((sql, accountId, id) => this.queueAtEnd(sql, accountId, id));
    this.calls.whenErased((sql, accountId, id) => this.erase(sql, accountId, id));
  }

  /**
   * A socket's part was stored: if its conversation has already ended, the recording is (re)assembled with it now. The
   * run queued at the end is then usually waiting out a retry (the socket was still open: a phone call's last sentence
   * plays after its end), so this one has a key of its own; two runs at once are safe (the parts are taken once).
   */
  async partStored(accountId: number, conversationId: string): Promise<void> {
    if ((await this.segments.state(accountId, conversationId))?.ended) {
      await this.jobs.send(JOB_ASSEMBLE, { accountId, conversationId }, { singletonKey: `${conversationId}:closed` });
    }
  }

  async assemble(accountId: number, conversationId: string): Promise<void> {
    const state = await this.segments.state(accountId, conversationId);
    // Erased (its parts went with it), or still going on (a later socket may add a part; the end queues the job).
    if (!state?.ended) return;
    if (state.socketOpen) throw new SocketStillOpen();
    const parts = await this.segments.list(accountId, conversationId);
    if (parts.length === 0) return;
    if (!state.hasCall) return this.discard(accountId, conversationId);
    const key = newRecordingKey();
    await this.storage.write(key, this.joined(parts));
    try {
      await this.recordings.attach(accountId, conversationId, key, async (sql) => {
        const seqs = parts.map((part) => part.seq);
        if ((await this.segments.take(accountId, conversationId, seqs, sql)) !== seqs.length) throw new PartsTaken();
      });
    } catch (error) {
      // attach removed the new object; another run took the parts, or the call was erased meanwhile (and they with it).
      if (error instanceof PartsTaken || error instanceof NotFoundException) return;
      throw error;
    }
    await this.removeObjects(parts.map((part) => part.storageKey));
  }

  /** In the transaction that ends the conversation: the assembly (or the discarding), when it was spoken. */
  private async queueAtEnd(sql: TransactionSql, accountId: number, conversationId: string): Promise<void> {
    if (await this.segments.hasRecording(accountId, conversationId, sql)) {
      await this.jobs.send(JOB_ASSEMBLE, { accountId, conversationId }, { sql, singletonKey: conversationId });
    }
  }

  /** In the call's erasure: the parts not assembled yet go with it (a storage failure rolls the erasure back). */
  private async erase(sql: TransactionSql, accountId: number, conversationId: string): Promise<void> {
    for (const key of await this.segments.deleteAll(accountId, conversationId, sql)) await this.storage.remove(key);
  }

  /** The conversation ended without a call (the visitor said nothing): its audio is not kept. */
  private async discard(accountId: number, conversationId: string): Promise<void> {
    await this.removeObjects(await this.segments.deleteAll(accountId, conversationId));
  }

  /** The parts' bytes one after the other, read from storage as they are written out. */
  private joined(parts: SegmentRow[]): Readable {
    const out = new PassThrough();
    void (async () => {
      for (const part of parts) {
        const opened = await this.storage.open(part.storageKey);
        if (opened) await pipeline(opened.stream, out, { end: false });
        // Not an outage (that throws): the object is gone for good, and the other parts are still worth keeping.
        else this.logger.warn('A part of a recording was missing from storage; the recording goes without it');
      }
      out.end();
    })().catch((error: unknown) => out.destroy(error as Error));
    return out;
  }

  /** Objects whose rows are gone: one left behind costs only space, so a failure is logged, not retried. */
  private async removeObjects(keys: string[]): Promise<void> {
    for (const key of keys) {
      await this.storage.remove(key).catch((error: unknown) => {
        this.logger.warn({ error: { name: (error as Error)?.name } }, 'A part of a recording could not be deleted; it is left orphaned');
      });
    }
  }
}
