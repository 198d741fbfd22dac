import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A retry by hand asked for while an attempt is in flight is remembered on the delivery, so that the attempt's
 * outcome schedules the next attempt at once instead of its delay overwriting the retry. Existing deliveries
 * have none pending (false).
 */
export class WebhookRetryRequested1795650000000 implements MigrationInterface {
  name = 'WebhookRetryRequested1795650000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" ADD "retry_requested" boolean NOT NULL DEFAULT false`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP COLUMN "retry_requested"`);
  }
}
