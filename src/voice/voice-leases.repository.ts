import { Injectable } from '@nestjs/common';
import { ConversationStatus } from '../conversations/conversation.entity';
import { Database } from '../database/database';
import { AccountQuery } from '../database/query.decorator';

const EXAMPLE_ID = '0b9c7f36-2f1e-4a52-9b7a-2f0d5f0c8a11';
const EXAMPLE_LEASE = '6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f';

/**
 * The lease that makes a conversation's voice socket the only one, across every instance: taken when `start`
 * succeeds, renewed while the socket lives (which also tells the socket when the conversation ended elsewhere),
 * released when it closes; an instance that dies lets it run out.
 */
@Injectable()
export class VoiceLeasesRepository {
  constructor(private readonly db: Database) {}

  /** Takes the lease for `seconds`; false when another socket holds it. */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE, 30])
  async take(accountId: number, conversationId: string, leaseId: string, seconds: number): Promise<boolean> {
    const rows = await this.db.query<{ taken: boolean }>(
      `UPDATE conversations SET voice_lease_id = $3, voice_lease_until = now() + make_interval(secs => $4)
        WHERE account_id = $1 AND id = $2 AND (voice_lease_until IS NULL OR voice_lease_until < now() OR voice_lease_id = $3)
        RETURNING true AS taken`,
      [accountId, conversationId, leaseId, seconds],
    );
    return rows.length > 0;
  }

  /**
   * Renews a lease still held; the conversation's status, or undefined when the lease was lost (or the conversation
   * erased). Every open socket renews every few seconds, so the commit does not wait for the disk (as a message's,
   * ASYNCHRONOUS_COMMIT): renewals that each held a pooled connection through a slow flush made the messages of
   * every call wait for a connection. A renewal lost to a crash of the database server only shortens the lease.
   */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE, 30])
  async renew(accountId: number, conversationId: string, leaseId: string, seconds: number): Promise<ConversationStatus | undefined> {
    const [row] = await this.db.query<{ status: ConversationStatus }>(
      `UPDATE conversations SET voice_lease_until = now() + make_interval(secs => $4)
        FROM (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous_commit
        WHERE account_id = $1 AND id = $2 AND voice_lease_id = $3
        RETURNING status`,
      [accountId, conversationId, leaseId, seconds],
    );
    return row?.status;
  }

  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE])
  async release(accountId: number, conversationId: string, leaseId: string): Promise<void> {
    await this.db.query(
      `UPDATE conversations SET voice_lease_id = NULL, voice_lease_until = NULL WHERE account_id = $1 AND id = $2 AND voice_lease_id = $3`,
      [accountId, conversationId, leaseId],
    );
  }
}
