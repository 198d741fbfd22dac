import { Injectable, Logger } from '@nestjs/common';
import { ApiKeysRepository } from './auth.repository';
import { CallerAccount } from './caller-account';

/** A key's last use is written at most this often. */
export const LAST_USED_RESOLUTION_MS = 60_000;
const MAX_ENTRIES = 10_000;

/**
 * Records each key's `lastUsedAt`, at most once a minute per key and never on the request's critical path:
 * this server remembers when it last wrote each key and skips the keys written in the last minute (no query at
 * all), and the UPDATE itself only writes when the stored time is over a minute old, so that several servers
 * sharing a key write it once a minute between them. The write is not awaited by the request; a failure (the
 * database down) is logged and forgotten: the next use after a minute tries again.
 */
@Injectable()
export class KeyUsage {
  private readonly logger = new Logger(KeyUsage.name);
  /** Key id → when this server last wrote its use (Date.now()). */
  private readonly writtenAt = new Map<number, number>();
  private failing = false;

  constructor(private readonly keys: ApiKeysRepository) {}

  record(account: CallerAccount): void {
    const now = Date.now();
    if (now - (this.writtenAt.get(account.keyId) ?? -Infinity) < LAST_USED_RESOLUTION_MS) return;
    if (this.writtenAt.size >= MAX_ENTRIES) this.writtenAt.clear();
    this.writtenAt.set(account.keyId, now);
    this.keys.touchLastUsed(account.id, account.keyId).then(
      () => (this.failing = false),
      (error: unknown) => {
        if (!this.failing) this.logger.warn({ err: error }, 'Could not record the last use of an API key');
        this.failing = true;
      },
    );
  }
}
