import { Injectable } from '@nestjs/common';
import { Database, Sql } from '../database/database';
import { AccountQuery } from '../database/query.decorator';

/** What the recording routes need of a call: its storage key (never shown) and the caller's name (the download's file name). */
export interface CallRecordingRow {
  id: string;
  name: string;
  recordingKey: string | null;
}

const EXAMPLE_ID = '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90';
const EXAMPLE_KEY = 'recordings/5f/5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90.mp3';

/** The calls' recording keys: the only SQL that reads or writes `calls.recording_key`. Account id first, in every WHERE. */
@Injectable()
export class RecordingsRepository {
  constructor(private readonly db: Database) {}

  @AccountQuery([1, EXAMPLE_ID])
  async find(accountId: number, callId: string): Promise<CallRecordingRow | undefined> {
    const [row] = await this.db.query<CallRecordingRow>(
      `SELECT id, name, recording_key AS "recordingKey" FROM calls WHERE account_id = $1 AND id = $2`,
      [accountId, callId],
    );
    return row;
  }

  /**
   * Locks the call's row for the rest of `sql`'s transaction and returns its key (`{ recordingKey }`), or
   * undefined when the call does not exist on the account. An upload's key swap (swapKey) waits for the lock.
   */
  @AccountQuery([1, EXAMPLE_ID])
  async lockKey(accountId: number, callId: string, sql: Sql = this.db): Promise<{ recordingKey: string | null } | undefined> {
    const [row] = await sql.query<{ recordingKey: string | null }>(
      `SELECT recording_key AS "recordingKey" FROM calls WHERE account_id = $1 AND id = $2 FOR UPDATE`,
      [accountId, callId],
    );
    return row;
  }

  /**
   * Sets the key and returns the one it replaced (`{ previous }`), atomically: the row is locked while the old
   * key is read, so two concurrent uploads, or an upload racing a delete, each get the key they really
   * replaced and no object is orphaned (setting the key it already has writes nothing). Undefined when the call
   * does not exist on the account. `isTest` says
   * whether webhooks hear of it (test calls have no events). Inside `sql`'s transaction when given.
   */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_KEY])
  async swapKey(
    accountId: number,
    callId: string,
    key: string | null,
    sql: Sql = this.db,
  ): Promise<{ previous: string | null; isTest: boolean } | undefined> {
    const [row] = await sql.query<{ previous: string | null; isTest: boolean }>(
      // The row is written only when the key changes: removing a recording that is not there changes nothing.
      `WITH old AS (
         SELECT account_id, id, recording_key, is_test FROM calls WHERE account_id = $1 AND id = $2 FOR UPDATE
       ), swapped AS (
         UPDATE calls AS c SET recording_key = $3
           FROM old
          WHERE c.account_id = $1 AND c.account_id = old.account_id AND c.id = old.id AND old.recording_key IS DISTINCT FROM $3
       )
       SELECT recording_key AS previous, is_test AS "isTest" FROM old`,
      [accountId, callId, key],
    );
    return row;
  }
}
