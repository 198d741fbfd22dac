import { OnApplicationShutdown } from '@nestjs/common';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import { RateLimitStorage } from './rate-limit-storage';

interface Window {
  hits: number;
  endsAt: number;
  blockedUntil: number;
}

const SWEEP_MS = 60_000;

/**
 * One fixed window per key in memory: O(1) per request whatever the limit (the library's default storage keeps
 * a timestamp per hit and scans them on every request), and the same semantics as RedisThrottlerStorage.
 */
export class MemoryThrottlerStorage implements RateLimitStorage, OnApplicationShutdown {
  private readonly windows = new Map<string, Window>();
  private readonly sweeper = setInterval(() => this.sweep(), SWEEP_MS).unref();

  async increment(key: string, ttl: number, limit: number, blockDuration: number, throttlerName: string): Promise<ThrottlerStorageRecord> {
    const now = Date.now();
    const id = `${throttlerName}:${key}`;
    let window = this.windows.get(id);
    if (!window || (window.endsAt <= now && window.blockedUntil <= now)) {
      window = { hits: 0, endsAt: now + ttl, blockedUntil: 0 };
      this.windows.set(id, window);
    }
    window.hits++;
    if (window.blockedUntil <= now && window.hits > limit) window.blockedUntil = now + blockDuration;
    return {
      totalHits: window.hits,
      timeToExpire: Math.ceil(Math.max(0, window.endsAt - now) / 1000),
      isBlocked: window.blockedUntil > now,
      timeToBlockExpire: Math.ceil(Math.max(0, window.blockedUntil - now) / 1000),
    };
  }

  async blockedFor(key: string, throttlerName: string): Promise<number> {
    const blockedUntil = this.windows.get(`${throttlerName}:${key}`)?.blockedUntil ?? 0;
    return Math.ceil(Math.max(0, blockedUntil - Date.now()) / 1000);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }

  private sweep(now = Date.now()): void {
    for (const [id, window] of this.windows) if (window.endsAt <= now && window.blockedUntil <= now) this.windows.delete(id);
  }
}
