import { Injectable } from '@nestjs/common';
import { ConversationCallType } from '../conversations/conversation.entity';
import { Database, Sql } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';
import { hashStreamToken, isStreamTokenShaped } from './stream-tokens';

/** A phone call as it starts, beside its conversation. */
export interface NewPhoneCall {
  conversationId: string;
  phoneNumberId: number;
  /** The carrier's id; null for an outbound call until the carrier has answered the request that places it. */
  callSid: string | null;
  streamTokenHash: string;
  /** How long the stream token opens the call's stream. */
  streamTokenSeconds: number;
}

/** What decides what a call's statuses mean: whether it was answered, whether its stream connected, every status so far. */
export interface PhoneCallProgressRow {
  conversationId: string;
  answeredAt: Date | null;
  streamConnectedAt: Date | null;
  statuses: string[];
}

/** What a media stream's token opens: the call it belongs to, once. */
export interface StreamGrant {
  accountId: number;
  conversationId: string;
  /** The carrier's id of the call (null for an outbound call whose placing has not been answered yet: the stream's own `start.callSid` says it). */
  callSid: string | null;
  phoneNumberId: number;
  callType: ConversationCallType;
}

/** A phone conversation's call on the carrier. */
export interface CarrierCallRow {
  callSid: string | null;
  phoneNumberId: number;
  /** Its conversation ended with the call moved elsewhere (transfer_call). */
  transferred: boolean;
}

const EXAMPLE_CONVERSATION = '5f0c2a7e-8d3b-4c1e-9a6f-2b7d4e8c1a90';
const EXAMPLE_CALL_SID = 'CA0123456789abcdef0123456789abcdef';
const EXAMPLE_HASH = 'a'.repeat(64);
const EXAMPLE_CALL: NewPhoneCall = {
  conversationId: EXAMPLE_CONVERSATION,
  phoneNumberId: 3,
  callSid: EXAMPLE_CALL_SID,
  streamTokenHash: EXAMPLE_HASH,
  streamTokenSeconds: 60,
};
/** How long a stream token still opens a call once the carrier says it was answered. */
export const ANSWERED_TOKEN_SECONDS = 60;

/** Every query of the phone calls and of their statuses, the account id first (but the stream token's lookup). */
@Injectable()
export class PhoneCallsRepository {
  constructor(private readonly db: Database) {}

  /** A new phone call, in `sql`'s transaction (its conversation's start). */
  @AccountQuery([1, EXAMPLE_CALL])
  async insert(accountId: number, call: NewPhoneCall, sql: Sql = this.db): Promise<void> {
    await sql.query(
      `INSERT INTO phone_calls (account_id, conversation_id, phone_number_id, call_sid, stream_token_hash, stream_token_expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
      [accountId, call.conversationId, call.phoneNumberId, call.callSid, call.streamTokenHash, call.streamTokenSeconds],
    );
  }

  /**
   * A new stream token for a call the carrier asked about again (its webhook retried), while its conversation is
   * active and no stream has taken the first: its conversation's id, or undefined when there is none to give.
   */
  @AccountQuery([1, EXAMPLE_CALL_SID, EXAMPLE_HASH, 60])
  async reissueToken(accountId: number, callSid: string, streamTokenHash: string, seconds: number): Promise<string | undefined> {
    const [row] = await this.db.query<{ conversationId: string }>(
      `UPDATE phone_calls pc SET stream_token_hash = $3, stream_token_expires_at = now() + make_interval(secs => $4)
        WHERE pc.account_id = $1 AND pc.call_sid = $2 AND pc.stream_connected_at IS NULL
          AND EXISTS (SELECT FROM conversations c WHERE c.account_id = pc.account_id AND c.id = pc.conversation_id AND c.status = 'active')
        RETURNING pc.conversation_id AS "conversationId"`,
      [accountId, callSid, streamTokenHash, seconds],
    );
    return row?.conversationId;
  }

  /** The carrier's id of an outbound call, once its answer to the request gives it. */
  @AccountQuery([1, EXAMPLE_CONVERSATION, EXAMPLE_CALL_SID])
  async attachCallSid(accountId: number, conversationId: string, callSid: string): Promise<void> {
    await this.db.query(`UPDATE phone_calls SET call_sid = $3 WHERE account_id = $1 AND conversation_id = $2`, [
      accountId,
      conversationId,
      callSid,
    ]);
  }

  /** Records a status the carrier reported for a call; false when it had been recorded already (a repeated callback). */
  @AccountQuery([1, EXAMPLE_CALL_SID, 'no-answer', 0])
  async recordStatus(accountId: number, callSid: string, status: string, durationSeconds: number | null): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO phone_call_statuses (account_id, call_sid, status, duration_seconds) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, call_sid, status) DO NOTHING RETURNING status`,
      [accountId, callSid, status, durationSeconds],
    );
    return rows.length > 0;
  }

  /** The call the carrier knows as `callSid`, with every status it reported so far; undefined when there is none (yet). */
  @AccountQuery([1, EXAMPLE_CALL_SID])
  async progress(accountId: number, callSid: string): Promise<PhoneCallProgressRow | undefined> {
    const [row] = await this.db.query<PhoneCallProgressRow>(
      `SELECT pc.conversation_id AS "conversationId", pc.answered_at AS "answeredAt", pc.stream_connected_at AS "streamConnectedAt",
              array(SELECT s.status::text FROM phone_call_statuses s WHERE s.account_id = pc.account_id AND s.call_sid = pc.call_sid
                     ORDER BY s.status) AS statuses
         FROM phone_calls pc WHERE pc.account_id = $1 AND pc.call_sid = $2`,
      [accountId, callSid],
    );
    return row;
  }

  /** The carrier says the call was answered: its stream token opens it for ANSWERED_TOKEN_SECONDS more at most. */
  @AccountQuery([1, EXAMPLE_CONVERSATION])
  async markAnswered(accountId: number, conversationId: string): Promise<void> {
    await this.db.query(
      `UPDATE phone_calls SET answered_at = coalesce(answered_at, now()),
              stream_token_expires_at = least(stream_token_expires_at, now() + make_interval(secs => ${ANSWERED_TOKEN_SECONDS}))
        WHERE account_id = $1 AND conversation_id = $2`,
      [accountId, conversationId],
    );
  }

  /** The call is over before its stream connected: its token opens nothing from now on. */
  @AccountQuery([1, EXAMPLE_CONVERSATION])
  async expireToken(accountId: number, conversationId: string): Promise<void> {
    await this.db.query(
      `UPDATE phone_calls SET stream_token_expires_at = least(stream_token_expires_at, now()) WHERE account_id = $1 AND conversation_id = $2`,
      [accountId, conversationId],
    );
  }

  /**
   * Takes a media stream's token, once: when it is unused, unexpired, and its call's conversation is active, it is
   * marked used and the call it opens is returned, in one statement (two streams presenting it at once: one gets it).
   * Anything else (a wrong, used, late or malformed token) gives undefined; a malformed one costs no query.
   */
  @UnscopedQuery('a media stream has no API key: its one-time token is its credential, and names one call (and its account)', [
    'vst_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
  ])
  async consumeStreamToken(token: string): Promise<StreamGrant | undefined> {
    if (!isStreamTokenShaped(token)) return undefined;
    const [grant] = await this.db.query<StreamGrant>(
      `UPDATE phone_calls pc SET stream_connected_at = now()
         FROM conversations c
        WHERE pc.stream_token_hash = $1 AND pc.stream_connected_at IS NULL AND pc.stream_token_expires_at > now()
          AND c.account_id = pc.account_id AND c.id = pc.conversation_id AND c.status = 'active'
        RETURNING pc.account_id AS "accountId", pc.conversation_id AS "conversationId", pc.call_sid AS "callSid",
                  pc.phone_number_id AS "phoneNumberId", c.call_type AS "callType"`,
      [hashStreamToken(token)],
    );
    return grant;
  }

  /** The carrier's call of a phone conversation (its CallSid null until the carrier gave it), and its number. */
  @AccountQuery([1, EXAMPLE_CONVERSATION])
  async carrierCall(accountId: number, conversationId: string): Promise<CarrierCallRow | undefined> {
    const [row] = await this.db.query<CarrierCallRow>(
      `SELECT pc.call_sid AS "callSid", pc.phone_number_id AS "phoneNumberId",
              EXISTS (SELECT 1 FROM calls c WHERE c.account_id = pc.account_id AND c.id = pc.conversation_id AND c.ended_reason = 'transferred') AS transferred
         FROM phone_calls pc WHERE pc.account_id = $1 AND pc.conversation_id = $2`,
      [accountId, conversationId],
    );
    return row;
  }

  /** Erasure of the call a phone conversation became, in its transaction: the statuses of its carrier call (the call's row cascades). */
  @AccountQuery([1, EXAMPLE_CONVERSATION])
  async deleteStatusesForErasure(accountId: number, conversationId: string, sql: Sql = this.db): Promise<void> {
    await sql.query(
      `DELETE FROM phone_call_statuses s USING phone_calls pc
        WHERE s.account_id = $1 AND pc.account_id = $1 AND pc.conversation_id = $2 AND s.call_sid = pc.call_sid`,
      [accountId, conversationId],
    );
  }
}
