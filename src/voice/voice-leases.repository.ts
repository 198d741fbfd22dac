import { Injectable } from '@nestjs/common';
import { ConversationStatus } from '../conversations/conversation.entity';
import { Database } from '../database/database';
import { AccountQuery } from '../database/query.decorator';

const EXAMPLE_ID = '0b9c7f36-2f1e-4a52-9b7a-2f0d5f0c8a11';
const EXAMPLE_LEASE = '6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f';

/** NOTIFY channel on which the holder of a conversation's lease hears, with its id, that it ended (notifyHolder). */
export const CONVERSATION_ENDED_CHANNEL = 'conversation_ended';

/** What taking a conversation's voice lease found. */
export type LeaseTaking = 'taken' | 'held' | 'closing';

/**
 * The lease that makes a conversation's voice socket the only one, across every instance: taken when `start`
 * succeeds, renewed while the socket lives (which also tells the socket when the conversation ended elsewhere),
 * marked closing when the socket closes, released once its call is stored; an instance that dies lets it run out.
 */
@Injectable()
export class VoiceLeasesRepository {
  constructor(private readonly db: Database) {}

  /**
   * Takes the lease for `seconds`: `taken`, or, when another socket holds it, whether that socket has closed and
   * its call is being stored (`closing`: the lease is free soon) or is live (`held`).
   */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE, 30])
  async take(accountId: number, conversationId: string, leaseId: string, seconds: number): Promise<LeaseTaking> {
    const [row] = await this.db.query<{ taken: boolean; closing: boolean | null }>(
      `WITH taken AS (
         UPDATE conversations SET voice_lease_id = $3, voice_lease_until = now() + make_interval(secs => $4), voice_lease_closing = false
          WHERE account_id = $1 AND id = $2 AND (voice_lease_until IS NULL OR voice_lease_until < now() OR voice_lease_id = $3)
          RETURNING true
       )
       SELECT EXISTS (SELECT 1 FROM taken) AS taken,
              (SELECT voice_lease_closing FROM conversations WHERE account_id = $1 AND id = $2) AS closing`,
      [accountId, conversationId, leaseId, seconds],
    );
    return row.taken ? 'taken' : row.closing ? 'closing' : 'held';
  }

  /** The lease's socket has closed: its call is being stored, and a new socket may wait for the lease. */
  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE])
  async markClosing(accountId: number, conversationId: string, leaseId: string): Promise<void> {
    await this.db.query(`UPDATE conversations SET voice_lease_closing = true WHERE account_id = $1 AND id = $2 AND voice_lease_id = $3`, [
      accountId,
      conversationId,
      leaseId,
    ]);
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

  /**
   * Tells the instance whose socket holds the conversation's lease (a phone call's media stream) that the
   * conversation ended: NOTIFY CONVERSATION_ENDED_CHANNEL with its id, sent when this commits. False when no live
   * socket holds it (none, or its instance died and let the lease run out): nobody was told.
   */
  @AccountQuery([1, EXAMPLE_ID])
  async notifyHolder(accountId: number, conversationId: string): Promise<boolean> {
    const rows = await this.db.query(
      `SELECT pg_notify('${CONVERSATION_ENDED_CHANNEL}', id::text) FROM conversations
        WHERE account_id = $1 AND id = $2 AND voice_lease_until > now() AND NOT voice_lease_closing`,
      [accountId, conversationId],
    );
    return rows.length > 0;
  }

  @AccountQuery([1, EXAMPLE_ID, EXAMPLE_LEASE])
  async release(accountId: number, conversationId: string, leaseId: string): Promise<void> {
    await this.db.query(
      `UPDATE conversations SET voice_lease_id = NULL, voice_lease_until = NULL, voice_lease_closing = false
        WHERE account_id = $1 AND id = $2 AND voice_lease_id = $3`,
      [accountId, conversationId, leaseId],
    );
  }
}

/**
 * Stores a call under its lease, as every transport closes one: the lease is marked closing first (a new socket may
 * then wait for it rather than be refused), `close` stores the call, and the lease is released after, whatever
 * happened (an error of `close` is rethrown once it is). The lease's own failures only shorten its life.
 */
export async function closeUnderLease(
  leases: VoiceLeasesRepository,
  lease: { accountId: number; conversationId: string; leaseId: string },
  close: () => Promise<void>,
): Promise<void> {
  const { accountId, conversationId, leaseId } = lease;
  try {
    await leases.markClosing(accountId, conversationId, leaseId).catch(() => undefined);
    await close();
  } finally {
    await leases.release(accountId, conversationId, leaseId).catch(() => undefined);
  }
}
