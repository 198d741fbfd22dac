import { Logger, OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import Redis from 'ioredis';
import { RateLimitStorage } from './rate-limit-storage';

/**
 * One fixed window per key, counted atomically in Redis, so that several instances of the service share
 * their limits. KEYS: hits, block. ARGV: window ms, limit, block ms. Returns hits, window ms left, block ms left.
 */
const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local windowLeft = redis.call('PTTL', KEYS[1])
local blockLeft = redis.call('PTTL', KEYS[2])
if blockLeft <= 0 and hits > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  blockLeft = tonumber(ARGV[3])
end
return { hits, windowLeft, blockLeft }
`;

/** Longest a request waits for Redis (a server that stopped answering without closing the connection). */
const COMMAND_TIMEOUT_MS = 500;
const CONNECT_TIMEOUT_MS = 2_000;
/** After a failed call, requests do not try Redis again for this long: an outage costs no request any time. */
const PAUSE_AFTER_FAILURE_MS = 1_000;

type ThrottleCommand = (hits: string, block: string, windowMs: number, limit: number, blockMs: number) => Promise<number[]>;

/**
 * Throttler storage in Redis (REDIS_URL); the in-memory default serves a single instance.
 *
 * Redis being down never fails a request: limits fail open (the request is served, uncounted), one warning is
 * logged per outage and limits apply again as soon as Redis answers. Calls are bounded: while disconnected a
 * command fails at once (no offline queue), one that gets no answer gives up after COMMAND_TIMEOUT_MS, and after
 * a failure requests skip Redis for PAUSE_AFTER_FAILURE_MS. The two keys of a counter share a hash tag, so that
 * the script that uses both runs on Redis Cluster too (same slot).
 */
export class RedisThrottlerStorage implements RateLimitStorage, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: Redis;
  private pausedUntil = 0;
  private outage = false;

  constructor(url: string) {
    this.redis = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      keepAlive: 10_000,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000), // reconnect for ever, at most every 2 s
    });
    // Connection errors are reported once per outage, by `call`: not once per reconnection attempt.
    this.redis.on('error', () => undefined);
    this.redis.on('ready', () => (this.pausedUntil = 0)); // connected again: the next request may try at once
    this.redis.defineCommand('throttle', { numberOfKeys: 2, lua: INCREMENT });
  }

  /** Waits for the first connection (made or failed), so that the first requests do not race it. */
  async connected(): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.redis.off('ready', done).off('error', done);
        resolve();
      };
      this.redis.once('ready', done).once('error', done);
    });
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const { hits, block } = this.keys(key, throttlerName);
    const counted = await this.call(() =>
      (this.redis as Redis & { throttle: ThrottleCommand }).throttle(hits, block, ttl, limit, blockDuration),
    );
    if (!counted) return { totalHits: 0, timeToExpire: Math.ceil(ttl / 1000), isBlocked: false, timeToBlockExpire: 0 };
    const [totalHits, windowLeft, blockLeft] = counted;
    return {
      totalHits,
      timeToExpire: Math.ceil(Math.max(0, windowLeft) / 1000),
      isBlocked: blockLeft > 0,
      timeToBlockExpire: Math.ceil(Math.max(0, blockLeft) / 1000),
    };
  }

  async blockedFor(key: string, throttlerName: string): Promise<number> {
    const left = await this.call(() => this.redis.pttl(this.keys(key, throttlerName).block));
    return Math.ceil(Math.max(0, left ?? 0) / 1000);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  /** `{throttle:<name>:<key>}:hits` and `…:block`: the braces make Redis Cluster hash both to one slot. */
  private keys(key: string, throttlerName: string): { hits: string; block: string } {
    const tag = `{throttle:${throttlerName}:${key}}`;
    return { hits: `${tag}:hits`, block: `${tag}:block` };
  }

  /** The command's answer, or undefined when Redis failed: the caller then lets the request through. */
  private async call<T>(command: () => Promise<T>): Promise<T | undefined> {
    if (Date.now() < this.pausedUntil) return undefined;
    try {
      const answer = await command();
      if (this.outage) this.logger.log('Redis answers again: rate limits apply again');
      this.outage = false;
      return answer;
    } catch (error) {
      this.pausedUntil = Date.now() + PAUSE_AFTER_FAILURE_MS;
      if (!this.outage)
        this.logger.warn(
          `Rate limiting through Redis failed (${(error as Error).message}): requests are served without rate limits until Redis answers again`,
        );
      this.outage = true;
      return undefined;
    }
  }
}
