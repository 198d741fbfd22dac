import { ConflictException, Inject, Injectable, Logger, UnprocessableEntityException } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Jobs } from '../jobs/jobs.service';
import { IdempotencySecrets, idempotencySecrets, openBody, requestHash, sealBody } from './idempotency-crypto';
import { IdempotencyClaim, IdempotencyRepository } from './idempotency.repository';
import { IDEMPOTENCY_SECRET } from './idempotency-secret';
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
/** The first request was done, but its stored answer does not open here: it is not run again. */
const unreadable = () =>
  new ConflictException(
    'A request with this Idempotency-Key was already answered, but its stored answer cannot be read by this server (stored before an upgrade, or by an instance with another IDEMPOTENCY_SECRET); it was not run again',
  );

/** Whether an answer is kept for replay: not a server failure (5xx) nor a 429, after which the same key may be retried. */
const isStored = (statusCode: number) => statusCode < 500 && statusCode !== 429;

/** The rules of `Idempotency-Key` (contract section 12); the SQL is IdempotencyRepository's. */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly records: IdempotencyRepository,
    @Inject(IDEMPOTENCY_SECRET) private readonly serverSecret: string,
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
  async begin(
    accountId: number,
    apiKeyId: number,
    idempotencyKey: string,
    method: string,
    path: string,
    body: unknown,
  ): Promise<IdempotencyOutcome> {
    const secrets = idempotencySecrets(this.serverSecret, idempotencyKey);
    const hash = requestHash(secrets, apiKeyId, method, path, body);
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const claim = await this.records.claim(accountId, secrets.keyHash, hash, randomUUID());
      if (claim) return { claimed: { accountId, claim, secrets } };
      const record = await this.records.find(accountId, secrets.keyHash);
      if (!record) continue; // released (a 5xx) or expired since the claim was tried: try again
      if (record.requestHash !== hash) {
        throw new UnprocessableEntityException(
          'This Idempotency-Key was used with another request (API key, method, path or body) in the last 24 hours; use a new key',
        );
      }
      if (record.statusCode === null || record.body === null) throw inFlight();
      return {
        replay: { statusCode: record.statusCode, contentType: record.contentType, body: this.open(accountId, secrets, record.body) },
      };
    }
    throw inFlight();
  }

  /**
   * The stored answer, or a 409 when it does not open with this server's secret: a record stored before the secret
   * took part (they expire within 24 hours), or by an instance with another secret. Never a 500, and never the
   * request run again (it was done once already).
   */
  private open(accountId: number, secrets: IdempotencySecrets, sealed: Buffer): Buffer {
    try {
      return openBody(secrets, context(accountId, secrets), sealed);
    } catch {
      this.logger.warn(
        'A stored idempotent answer could not be decrypted: instances that share no DATA_DIR need the same IDEMPOTENCY_SECRET',
      );
      throw unreadable();
    }
  }

  /** Records the first request's answer for replays, or gives the key up after a 5xx or 429. Never throws. */
  async finish(key: ClaimedKey, response: CapturedResponse): Promise<void> {
    const { accountId, claim, secrets } = key;
    try {
      if (!isStored(response.statusCode)) return await this.records.release(accountId, claim.id, claim.claim);
      const body = sealBody(secrets, context(accountId, secrets), response.body);
      await this.records.complete(accountId, claim.id, claim.claim, {
        statusCode: response.statusCode,
        contentType: response.contentType,
        body,
      });
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
