import { ConflictException, Injectable, Logger, UnprocessableEntityException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Jobs } from '../jobs/jobs.service';
import { IdempotencySecrets, idempotencySecrets, openBody, requestHash, sealBody } from './idempotency-crypto';
import { IdempotencyClaim, IdempotencyRepository } from './idempotency.repository';
import type { CapturedResponse } from './response-capture';

/** The request holds the key: it runs, and `finish` records its answer. */
export interface ClaimedKey {
  accountId: number;
  claim: IdempotencyClaim;
  secrets: IdempotencySecrets;
}

export type IdempotencyOutcome = { claimed: ClaimedKey } | { replay: CapturedResponse };

const EXPIRE_JOB = 'idempotency.expire';
const EXPIRE_BATCH = 10_000;
/** Claim attempts when the record keeps changing hands between the claim and the read (released, expired). */
const CLAIM_ATTEMPTS = 3;

const inFlight = () => new ConflictException('A request with this Idempotency-Key is still in progress; retry once it has been answered');

/** Whether an answer is kept for replay: not a server failure (5xx) nor a 429, after which the same key may be retried. */
const isStored = (statusCode: number) => statusCode < 500 && statusCode !== 429;

/** The rules of `Idempotency-Key` (contract section 12); the SQL is IdempotencyRepository's. */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly records: IdempotencyRepository,
    jobs: Jobs,
  ) {
    jobs.define({
      name: EXPIRE_JOB,
      cron: '*/10 * * * *',
      expireInSeconds: 600,
      retryLimit: 0, // the next tick is the retry
      handler: async () => {
        await this.deleteExpired();
      },
    });
  }

  /**
   * Claims the key for this request, or finds the first request's: its stored answer to replay; a 422 when it
   * was another request (API key, method, path or body); a 409 while it is still running.
   */
  async begin(accountId: number, apiKeyId: number, idempotencyKey: string, method: string, path: string, body: unknown): Promise<IdempotencyOutcome> {
    const secrets = idempotencySecrets(idempotencyKey);
    const hash = requestHash(secrets, apiKeyId, method, path, body);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const claim = await this.records.claim(accountId, secrets.keyHash, hash, randomUUID());
      if (claim) return { claimed: { accountId, claim, secrets } };
      const record = await this.records.find(accountId, secrets.keyHash);
      if (!record) continue; // released (a 5xx) or expired since the claim was tried: try again
      if (record.requestHash !== hash) {
        throw new UnprocessableEntityException('This Idempotency-Key was used with another request (API key, method, path or body) in the last 24 hours; use a new key');
      }
      if (record.statusCode === null || record.body === null) throw inFlight();
      const stored = openBody(secrets, context(accountId, secrets), record.body);
      return { replay: { statusCode: record.statusCode, contentType: record.contentType, body: stored } };
    }
    throw inFlight();
  }

  /** Records the first request's answer for replays, or gives the key up after a 5xx or 429. Never throws. */
  async finish(key: ClaimedKey, response: CapturedResponse): Promise<void> {
    const { accountId, claim, secrets } = key;
    try {
      if (!isStored(response.statusCode)) return await this.records.release(accountId, claim.id, claim.claim);
      const body = sealBody(secrets, context(accountId, secrets), response.body);
      await this.records.complete(accountId, claim.id, claim.claim, { statusCode: response.statusCode, contentType: response.contentType, body });
    } catch (error) {
      // The key stays in flight until IN_FLIGHT_LEASE: retries meanwhile get a 409, never the work done twice.
      this.logger.warn({ err: error }, 'Could not record the answer of an idempotent request');
    }
  }

  /** The periodic clean-up (a cron job on one instance at a time): every expired record, in batches. */
  async deleteExpired(): Promise<number> {
    let total = 0;
    let deleted: number;
    do {
      deleted = await this.records.deleteExpired(EXPIRE_BATCH);
      total += deleted;
    } while (deleted === EXPIRE_BATCH);
    return total;
  }
}

/** What the stored body is bound to: its account and key (the ciphertext of one row does not open in another). */
const context = (accountId: number, secrets: IdempotencySecrets) => `${accountId}:${secrets.keyHash}`;
