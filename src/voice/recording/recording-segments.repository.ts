import { Injectable } from '@nestjs/common';
import { Database, Sql } from '../../database/database';
import { AccountQuery } from '../../database/query.decorator';

const EXAMPLE_ID = '0b9c7f36-2f1e-4a52-9b7a-2f0d5f0c8a11';
const EXAMPLE_KEY = 'recordings/6f/6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f.mp3';

export interface SegmentRow {
  seq: number;
  storageKey: string;
}

/** Where a spoken conversation stands for its recording's assembly. */
export interface RecordingState {
  ended: boolean;
  /** A voice socket holds the conversation: its part of the recording is not stored yet. */
  socketOpen: boolean;
  /** The conversation became a call (the visitor said something), which takes the recording. */
  hasCall: boolean;
}

/** The parts of spoken conversations' recordings, by conversation; every statement is scoped to the account. */
@Injectable()
export class RecordingSegmentsRepository {
  constructor(private readonly db: Database) {}

  /** Seconds and bytes recorded so far by the conversation's earlier sockets. */
  @AccountQuery([1, EXAMPLE_ID])
  async totals(accountId: number, conversationId: string): Promise<{ seconds: number; bytes: number }> {
    const [row] = await this.db.query<{ seconds: number; bytes: number }>(
      `SELECT coalesce(sum(seconds), 0)::float8 AS seconds, coalesce(sum(bytes), 0)::float8 AS bytes
         FROM conversation_recording_segments WHERE account_id = $1 AND conversation_id = $2`,
      [accountId, conversationId],
    );
    return row;
  }

  /** Lists a new part after the others; false when the conversation no longer exists (erased meanwhile). */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_KEY, 12.5, 100_000])
  async insert(accountId: number, conversationId: string, storageKey: string, seconds: number, bytes: number): Promise<boolean> {
    const rows = await this.db.query<{ seq: number }>(
      `INSERT INTO conversation_recording_segments (account_id, conversation_id, seq, storage_key, seconds, bytes)
       SELECT c.account_id, c.id,
              coalesce((SELECT max(s.seq) FROM conversation_recording_segments s WHERE s.account_id = c.account_id AND s.conversation_id = c.id), 0) + 1,
              $3, $4, $5
         FROM conversations c WHERE c.account_id = $1 AND c.id = $2
       RETURNING seq`,
      [accountId, conversationId, storageKey, seconds, bytes],
    );
    return rows.length > 0;
  }

  /** The parts in order. */
  @AccountQuery([1, EXAMPLE_ID])
  list(accountId: number, conversationId: string): Promise<SegmentRow[]> {
    return this.db.query<SegmentRow>(
      `SELECT seq, storage_key AS "storageKey" FROM conversation_recording_segments
        WHERE account_id = $1 AND conversation_id = $2 ORDER BY seq`,
      [accountId, conversationId],
    );
  }

  /** Deletes these parts' rows in `sql`'s transaction; how many there still were (fewer: another run took them). */
  @AccountQuery([1, EXAMPLE_ID, [1, 2]])
  async take(accountId: number, conversationId: string, seqs: number[], sql: Sql = this.db): Promise<number> {
    const rows = await sql.query<{ seq: number }>(
      `DELETE FROM conversation_recording_segments WHERE account_id = $1 AND conversation_id = $2 AND seq = ANY($3) RETURNING seq`,
      [accountId, conversationId, seqs],
    );
    return rows.length;
  }

  /** Deletes every part's row; their storage keys, for the objects to be deleted too. */
  @AccountQuery([1, EXAMPLE_ID])
  async deleteAll(accountId: number, conversationId: string, sql: Sql = this.db): Promise<string[]> {
    const rows = await sql.query<{ storageKey: string }>(
      `DELETE FROM conversation_recording_segments WHERE account_id = $1 AND conversation_id = $2 RETURNING storage_key AS "storageKey"`,
      [accountId, conversationId],
    );
    return rows.map((row) => row.storageKey);
  }

  /** Whether the conversation has a recording to assemble: parts stored, or a voice socket still writing one. */
  @AccountQuery([1, EXAMPLE_ID])
  async hasRecording(accountId: number, conversationId: string, sql: Sql = this.db): Promise<boolean> {
    const [row] = await sql.query<{ recorded: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM conversation_recording_segments s WHERE s.account_id = $1 AND s.conversation_id = $2)
           OR EXISTS (SELECT 1 FROM conversations c WHERE c.account_id = $1 AND c.id = $2 AND c.voice_lease_until > now()) AS recorded`,
      [accountId, conversationId],
    );
    return row.recorded;
  }

  /** The conversation's state for the assembly; undefined when it no longer exists (erased). */
  @AccountQuery([1, EXAMPLE_ID])
  async state(accountId: number, conversationId: string): Promise<RecordingState | undefined> {
    const [row] = await this.db.query<RecordingState>(
      `SELECT c.status = 'ended' AS ended,
              coalesce(c.voice_lease_until > now(), false) AS "socketOpen",
              EXISTS (SELECT 1 FROM calls k WHERE k.account_id = c.account_id AND k.id = c.id) AS "hasCall"
         FROM conversations c WHERE c.account_id = $1 AND c.id = $2`,
      [accountId, conversationId],
    );
    return row;
  }
}
