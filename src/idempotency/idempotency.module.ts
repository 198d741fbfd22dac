import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { IdempotencyGuard } from './idempotency.guard';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

/** `Idempotency-Key` on the management API's POSTs; imported by AppModule after the other guards' modules. */
@Module({
  providers: [IdempotencyRepository, IdempotencyService, { provide: APP_GUARD, useClass: IdempotencyGuard }],
})
export class IdempotencyModule {}
