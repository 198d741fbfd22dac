import { ThrottlerStorage } from '@nestjs/throttler';

/** The Nest token of the counters (in memory, or in Redis with REDIS_URL). */
export const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/** @nestjs/throttler's counter storage, plus a look at a block without counting a hit. */
export interface RateLimitStorage extends ThrottlerStorage {
  /** Seconds left of the block on `key` of `throttlerName`; 0 when it is not blocked. */
  blockedFor(key: string, throttlerName: string): Promise<number>;
}
