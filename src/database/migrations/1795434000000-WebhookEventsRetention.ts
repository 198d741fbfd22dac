import { MigrationInterface, QueryRunner } from 'typeorm';
import { createIndexConcurrently } from '../migrate';

/**
 * Retention of webhook events (WEBHOOK_RETENTION_DAYS): the hourly clean-up deletes the oldest events first,
 * through this index. The table grows with every call that has a webhook, so the index is built without
 * locking out the outbox's writes.
 */
export class WebhookEventsRetention1795434000000 implements MigrationInterface {
  name = 'WebhookEventsRetention1795434000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await createIndexConcurrently(queryRunner, 'IDX_webhook_events_created_at', 'ON "webhook_events" ("created_at")');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_events_created_at"`);
  }
}
