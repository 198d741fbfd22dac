import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AppConfig } from '../config/config';
import { APP_CONFIG } from '../config/config.module';
import { IdempotencyGuard } from './idempotency.guard';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';
import { IDEMPOTENCY_SECRET, loadIdempotencySecret } from './idempotency-secret';

/** `Idempotency-Key` on the management API's POSTs; imported by AppModule after the other guards' modules. */
@Module({
  providers: [
    IdempotencyRepository,
    IdempotencyService,
    {
      provide: IDEMPOTENCY_SECRET,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => loadIdempotencySecret(config.idempotencySecret, config.dataDir),
    },
    { provide: APP_GUARD, useClass: IdempotencyGuard },
  ],
})
export class IdempotencyModule {}
