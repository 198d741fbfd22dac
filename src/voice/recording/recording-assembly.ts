import { Injectable, Logger, NotFoundException, OnModuleInit } from '@nestjs/common';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConversationCalls } from '../../conversations/conversation-calls.service';
import { Database, TransactionSql } from '../../database/database';
import { Jobs } from '../../jobs/jobs.service';
import { newRecordingKey, RecordingStorage } from '../../recordings/recording-storage';
import { RecordingsService } from '../../recordings/recordings.service';
import { RecordingSegmentsRepository, SegmentRow } from './recording-segments.repository';

export const JOB_ASSEMBLE = 'voice.assemble-recording';

interface ConversationRef {
  accountId: number;
  conversationId: string;
}

/** Thrown while a voice socket still writes its part: pg-boss retries the job later. */
class SocketStillOpen extends Error {
  constructor() {
    super('A voice socket still holds the conversation; its part of the recording is not stored yet');
  }
}

/**
 * A spoken call's recording, joined from its sockets' parts once the conversation has ended and no socket is
 * left (a durable job: any instance, retried while a socket still writes). MP3 frames of one encoding
 * concatenate, so the parts are streamed one after the other into one object, which becomes the call's
 * recording as an upload would (`hasRecording`, `call.recording.ready`); then the parts are deleted.
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
    private readonly database: Database,
  ) {}

  onModuleInit(): void {
    this.jobs.define<ConversationRef>({
      name: JOB_ASSEMBLE,
      handler: ({ accountId, conversationId }) => this.assemble(accountId, conversationId),
      concurrency: 2,
      retryLimit: 20,
      retryDelay: 5,
      retryBackoff: true,
      expireInSeconds: 600,
      policy: 'short',
    });
    this.calls.whenRecorded((sql, accountId, id) => this.queueInCall(sql, accountId, id));
  }

  /** In the transaction that records the call: the assembly, when the conversation was spoken. */
  private async queueInCall(sql: TransactionSql, accountId: number, conversationId: string): Promise<void> {
    if (await this.segments.hasRecording(accountId, conversationId, sql)) {
      await this.jobs.send(JOB_ASSEMBLE, { accountId, conversationId }, { sql, singletonKey: conversationId });
    }
  }

  /** A socket closed after its conversation ended (and became a call): its part joins the recording too. */
  async queueIfEnded(accountId: number, conversationId: string): Promise<void> {
    await this.jobs.send(JOB_ASSEMBLE, { accountId, conversationId }, { singletonKey: conversationId });
  }

  async assemble(accountId: number, conversationId: string): Promise<void> {
    if (await this.segments.socketOpen(accountId, conversationId)) throw new SocketStillOpen();
    await this.database.transaction(async (sql) => {
      const parts = await this.segments.lockAll(accountId, conversationId, sql);
      if (parts.length === 0) return;
      const key = newRecordingKey();
      await this.storage.write(key, this.joined(parts));
      try {
        await this.recordings.attach(accountId, conversationId, key);
      } catch (error) {
        // No call: the conversation ended before the visitor said anything (or the call was erased).
        if (!(error instanceof NotFoundException)) throw error;
      }
      await this.segments.delete(
        accountId,
        conversationId,
        parts.map((part) => part.seq),
        sql,
      );
      for (const part of parts) await this.storage.remove(part.storageKey).catch(() => undefined);
    });
  }

  /** The parts' bytes one after the other, read from storage as they are written out. */
  private joined(parts: SegmentRow[]): Readable {
    const out = new PassThrough();
    void (async () => {
      for (const part of parts) {
        const opened = await this.storage.open(part.storageKey);
        if (!opened) {
          this.logger.warn('A part of a recording was missing from storage');
          continue;
        }
        await pipeline(opened.stream, out, { end: false });
      }
      out.end();
    })().catch((error: unknown) => out.destroy(error as Error));
    return out;
  }
}
