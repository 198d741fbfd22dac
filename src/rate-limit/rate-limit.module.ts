import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { MemoryThrottlerStorage } from './memory-throttler-storage';
import { RateLimitGuard, rateLimitOptions } from './rate-limit';
import { RATE_LIMIT_STORAGE, RateLimitStorage } from './rate-limit-storage';
import { RedisThrottlerStorage } from './redis-throttler-storage';
import { UnauthenticatedLimit } from './unauthenticated-limit';

async function createStorage(config: AppConfig): Promise<RateLimitStorage> {
  if (!config.redisUrl) return new MemoryThrottlerStorage();
  const storage = new RedisThrottlerStorage(config.redisUrl);
  await storage.connected();
  return storage;
}

/**
 * The counters (shared in Redis when REDIS_URL is set, else in memory; a provider, so that it closes on shutdown)
 * and the limit of requests without a valid key. Global: the API-key guard (AuthModule) uses the latter.
 */
@Global()
@Module({
  providers: [{ provide: RATE_LIMIT_STORAGE, inject: [APP_CONFIG], useFactory: createStorage }, UnauthenticatedLimit],
  exports: [RATE_LIMIT_STORAGE, UnauthenticatedLimit],
})
export class RateLimitStorageModule {}

@Module({
  imports: [
    RateLimitStorageModule,
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, RATE_LIMIT_STORAGE],
      useFactory: (config: AppConfig, storage: RateLimitStorage) => ({ ...rateLimitOptions(config), storage }),
    }),
  ],
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
export class RateLimitModule {}
