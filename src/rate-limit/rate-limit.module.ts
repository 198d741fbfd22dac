import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule, ThrottlerStorage } from '@nestjs/throttler';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { RateLimitGuard, rateLimitOptions } from './rate-limit';
import { MemoryThrottlerStorage } from './memory-throttler-storage';
import { RedisThrottlerStorage } from './redis-throttler-storage';

const RATE_LIMIT_STORAGE = Symbol('RATE_LIMIT_STORAGE');

/** The counters: shared in Redis when REDIS_URL is set, else in memory (a provider, so that it closes on shutdown). */
@Module({
  providers: [
    {
      provide: RATE_LIMIT_STORAGE,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => (config.redisUrl ? new RedisThrottlerStorage(config.redisUrl) : new MemoryThrottlerStorage()),
    },
  ],
  exports: [RATE_LIMIT_STORAGE],
})
class RateLimitStorageModule {}

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      imports: [RateLimitStorageModule],
      inject: [APP_CONFIG, RATE_LIMIT_STORAGE],
      useFactory: (config: AppConfig, storage: ThrottlerStorage) => ({ ...rateLimitOptions(config), storage }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
export class RateLimitModule {}
