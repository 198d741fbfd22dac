import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { AccountQuery, UnscopedQuery } from '../database/query.decorator';

/** How long a key is remembered after its first request. */
export const IDEMPOTENCY_KEY_LIFETIME = '24 hours';
/**
 * A first request still unanswered after this is taken for dead (its instance crashed mid-request: a
 * graceful shutdown finishes its requests) and its key may be claimed again. No POST runs this long: every
 * statement has a 10 s timeout.
 */
export const IN_FLIGHT_LEASE = '5 minutes';

/** The record of a key, as a retry finds it. */
export interface IdempotencyRecord {
  id: number;
  requestHash: string;
  /** Null while the first request is in flight. */
  statusCode: number | null;
  contentType: string | null;
  body: Buffer | null;
}

/** A key just claimed: its row and the claim that lets this request, and only it, complete or release it. */
export interface IdempotencyClaim {
  id: number;
  claim: string;
}

/** The first request's answer, as stored. */
export interface StoredResponse {
  statusCode: number;
  contentType: string | null;
  body: Buffer;
}

const EXAMPLE_HASH = 'a'.repeat(64);
const EXAMPLE_CLAIM = '00000000-0000-4000-8000-000000000001';

/** Every query of the idempotency_keys table. */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly db: Database) {}

  /**
   * Claims the key for a request: inserts its record, or takes over one that expired or whose first request
   * died (IN_FLIGHT_LEASE). The unique index on (account_id, key_hash) decides between concurrent requests,
   * on any instance: exactly one gets the row back. Undefined: the key is held by another record.
   */
  @AccountQuery([1, EXAMPLE_HASH, EXAMPLE_HASH, EXAMPLE_CLAIM])
  async claim(accountId: number, keyHash: string, requestHash: string, claim: string): Promise<IdempotencyClaim | undefined> {
    const [row] = await this.db.query<IdempotencyClaim>(
      `INSERT INTO idempotency_keys (account_id, key_hash, request_hash, claim) VALUES ($1, $2, $3, $4)
       ON CONFLICT (account_id, key_hash) DO UPDATE
          SET request_hash = excluded.request_hash, claim = excluded.claim, status_code = NULL, content_type = NULL, body = NULL, created_at = now()
        WHERE idempotency_keys.created_at < now() - interval '${IDEMPOTENCY_KEY_LIFETIME}'
           OR (idempotency_keys.status_code IS NULL AND idempotency_keys.created_at < now() - interval '${IN_FLIGHT_LEASE}')
       RETURNING id, claim`,
      [accountId, keyHash, requestHash, claim],
    );
    return row;
  }

  /** The live record of the key (not expired), if any. */
  @AccountQuery([1, EXAMPLE_HASH])
  async find(accountId: number, keyHash: string): Promise<IdempotencyRecord | undefined> {
    const [row] = await this.db.query<IdempotencyRecord>(
      `SELECT id, request_hash AS "requestHash", status_code AS "statusCode", content_type AS "contentType", body
         FROM idempotency_keys
        WHERE account_id = $1 AND key_hash = $2 AND created_at >= now() - interval '${IDEMPOTENCY_KEY_LIFETIME}'`,
      [accountId, keyHash],
    );
    return row;
  }

  /** Stores the first request's answer, if this request still holds the claim. */
  @AccountQuery([1, 3, EXAMPLE_CLAIM, { statusCode: 201, contentType: 'application/json; charset=utf-8', body: Buffer.from('sealed') }])
  async complete(accountId: number, id: number, claim: string, response: StoredResponse): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET status_code = $4, content_type = $5, body = $6 WHERE account_id = $1 AND id = $2 AND claim = $3`,
      [accountId, id, claim, response.statusCode, response.contentType, response.body],
    );
  }

  /** Gives the key up (the first request failed with a 5xx): a retry runs the request again. */
  @AccountQuery([1, 3, EXAMPLE_CLAIM])
  async release(accountId: number, id: number, claim: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND id = $2 AND claim = $3`, [accountId, id, claim]);
  }

  /** Deletes up to `limit` expired records, oldest first (by the created_at index); how many. */
  @UnscopedQuery("the periodic clean-up deletes every account's expired keys", [1000])
  async deleteExpired(limit: number): Promise<number> {
    const deleted = await this.db.query(
      `DELETE FROM idempotency_keys WHERE id IN (
         SELECT id FROM idempotency_keys WHERE created_at < now() - interval '${IDEMPOTENCY_KEY_LIFETIME}' ORDER BY created_at LIMIT $1
       ) RETURNING id`,
      [limit],
    );
    return deleted.length;
  }
}
