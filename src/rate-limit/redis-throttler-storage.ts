import { OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import Redis from 'ioredis';

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

/** Throttler storage in Redis (REDIS_URL); the in-memory default serves a single instance. */
export class RedisThrottlerStorage implements ThrottlerStorage, OnApplicationShutdown {
  private readonly redis: Redis;

  constructor(url: string) {
    this.redis = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
    this.redis.defineCommand('throttle', { numberOfKeys: 2, lua: INCREMENT });
  }

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const base = `throttle:${throttlerName}:${key}`;
    const [hits, windowLeft, blockLeft] = (await (this.redis as Redis & { throttle: (...args: unknown[]) => Promise<number[]> }).throttle(
      `${base}:hits`,
      `${base}:block`,
      ttl,
      limit,
      blockDuration,
    )) as number[];
    return {
      totalHits: hits,
      timeToExpire: Math.ceil(Math.max(0, windowLeft) / 1000),
      isBlocked: blockLeft > 0,
      timeToBlockExpire: Math.ceil(Math.max(0, blockLeft) / 1000),
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
