import { forwardRef, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { callNotFound } from '../calls/call-not-found';
import { CallsService } from '../calls/calls.service';
import { toCallResponse, withCredits } from '../calls/dto/call-response.dto';
import { isUuid } from '../common/id.pipes';
import { AppConfig } from '../config/config';
import { InjectConfig } from '../config/config.module';
import { Database, Sql, TransactionSql } from '../database/database';
import { WebhookEvents } from '../webhooks/webhook-events.service';
import { limitedBody } from './byte-limit';
import { contentDisposition } from './content-disposition';
import { newRecordingKey, OpenedRecording, RecordingStorage } from './recording-storage';
import { CallRecordingRow, RecordingsRepository } from './recordings.repository';

export interface RecordingUrl {
  url: string;
  expiresAt: Date;
}

export interface RecordingDownload extends OpenedRecording {
  contentDisposition: string;
}

/**
 * A call's recording: the audio lives in the storage driver under a random key, and the call row holds the
 * key (hasRecording = the key is set). Every method takes the caller's account first; the call lookup is
 * scoped by it, so another account's call is a 404. Keys are never logged nor returned.
 */
@Injectable()
export class RecordingsService {
  private readonly logger = new Logger(RecordingsService.name);

  constructor(
    private readonly recordings: RecordingsRepository,
    private readonly storage: RecordingStorage,
    // The call.recording.ready event carries the call as GET /calls/{callId} shows it; CallsService needs this one too.
    @Inject(forwardRef(() => CallsService)) private readonly calls: Pick<CallsService, 'find'>,
    private readonly database: Database,
    private readonly webhookEvents: WebhookEvents,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  /** 404 unless the call is the account's. Done before reading a body, so nothing is stored for a stranger. */
  async assertCall(accountId: number, callId: string): Promise<void> {
    await this.callOf(accountId, callId);
  }

  /**
   * Streams the body into storage under a fresh key, then points the call at it, then deletes the recording
   * it replaced. A failure at any step leaves the call as it was, and nothing new in storage. The key swap
   * is atomic, so concurrent uploads (or an upload racing a delete) orphan no object. The caller checked the
   * call first (assertCall, before reading any of the body); if it is deleted meanwhile, the swap finds nothing,
   * the new object is removed and the answer is a 404. The swap and the `call.recording.ready` event commit
   * together (the webhooks' outbox).
   */
  async upload(accountId: number, callId: string, body: IncomingMessage): Promise<void> {
    const key = newRecordingKey();
    await this.storage.write(key, limitedBody(body, this.config.storage.maxRecordingBytes));
    await this.attach(accountId, callId, key);
  }

  /**
   * Points the call at the object already stored under `key` (an upload's, or a spoken call's recording) and
   * deletes the recording it replaced; `call.recording.ready` commits with the swap, and so does `alongside`
   * (run once the call's row is locked, when the call exists). When the call does not exist (or the swap or
   * `alongside` fails), the object is removed and the answer is a 404 (or the failure).
   */
  async attach(accountId: number, callId: string, key: string, alongside?: (sql: TransactionSql) => Promise<void>): Promise<void> {
    let swapped: { previous: string | null } | undefined;
    try {
      swapped = await this.database.transaction(async (sql) => {
        const swap = await this.recordings.swapKey(accountId, callId.toLowerCase(), key, sql);
        if (swap) await alongside?.(sql);
        if (swap && !swap.isTest) {
          const call = (await this.calls.find(accountId, callId.toLowerCase(), sql))!; // the swap just locked it
          await this.webhookEvents.record(sql, accountId, {
            type: 'call.recording.ready',
            data: toCallResponse(withCredits(call, this.config.creditsPerMinute)),
          });
        }
        return swap;
      });
    } catch (error) {
      await this.removeQuietly(key);
      throw error;
    }
    if (!swapped) {
      await this.removeQuietly(key);
      throw callNotFound(callId);
    }
    if (swapped.previous) await this.removeQuietly(swapped.previous);
  }

  async remove(accountId: number, callId: string): Promise<void> {
    const swapped = isUuid(callId) ? await this.recordings.swapKey(accountId, callId.toLowerCase(), null) : undefined;
    if (!swapped) throw callNotFound(callId);
    const previous = swapped.previous;
    if (!previous) throw this.noRecording(callId);
    await this.removeQuietly(previous);
  }

  /**
   * For the erasure of a call, inside the transaction that deletes its row: locks the row, then deletes the
   * recording's object. A storage failure throws (a 503) and so rolls the erasure back: the call and its audio
   * stay. The lock makes an upload in flight wait: its key swap then finds no call and removes its new object,
   * so nothing is orphaned. False when the call does not exist on the account.
   */
  async deleteForErasure(accountId: number, callId: string, sql: Sql): Promise<boolean> {
    const call = await this.recordings.lockKey(accountId, callId, sql);
    if (!call) return false;
    if (call.recordingKey) await this.storage.remove(call.recordingKey);
    return true;
  }

  async playbackUrl(accountId: number, callId: string): Promise<RecordingUrl> {
    const key = await this.keyOf(accountId, callId);
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + this.config.recordingUrlTtlSeconds * 1000);
    return { url: await this.storage.playbackUrl(key, expiresAt), expiresAt };
  }

  async download(accountId: number, callId: string): Promise<RecordingDownload> {
    const call = await this.callOf(accountId, callId);
    if (!call.recordingKey) throw this.noRecording(callId);
    const opened = await this.storage.open(call.recordingKey);
    if (!opened) {
      this.logger.warn({ accountId, callId }, 'The call has a recording key but storage has no such object');
      throw this.noRecording(callId);
    }
    return { ...opened, contentDisposition: contentDisposition('attachment', call.name, call.id) };
  }

  private async keyOf(accountId: number, callId: string): Promise<string> {
    const { recordingKey } = await this.callOf(accountId, callId);
    if (!recordingKey) throw this.noRecording(callId);
    return recordingKey;
  }

  private async callOf(accountId: number, callId: string): Promise<CallRecordingRow> {
    const call = isUuid(callId) ? await this.recordings.find(accountId, callId.toLowerCase()) : undefined;
    if (!call) throw callNotFound(callId);
    return call;
  }

  private noRecording(callId: string): NotFoundException {
    return new NotFoundException(`Call ${callId} has no recording`);
  }

  /** A left-over object costs only space: its deletion failing must not fail the request. */
  private async removeQuietly(key: string): Promise<void> {
    try {
      await this.storage.remove(key);
    } catch (error) {
      this.logger.warn(
        { err: error instanceof Error ? error.name : 'unknown' },
        'Could not delete a recording object; it is left orphaned',
      );
    }
  }
}
