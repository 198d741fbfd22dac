import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox: an event's transaction writes its row here (before, it wrote the event, its deliveries and their
 * jobs), and the relay moves it to webhook_events with its deliveries and jobs. Events recorded before this
 * migration already have their deliveries. No index but the key: the relay reads oldest first, and the table
 * holds only the events of the last few milliseconds.
 */
export class WebhookOutbox1795644318865 implements MigrationInterface {
  name = 'WebhookOutbox1795644318865';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_outbox" ("seq" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "account_id" integer NOT NULL, "event_id" uuid NOT NULL, "type" character varying(40) NOT NULL, "call_id" uuid, "body" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_622b8c371df8a82b5fba17997c1" PRIMARY KEY ("seq"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_outbox" ADD CONSTRAINT "FK_f0e662d305651352be7c8232523" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_outbox" DROP CONSTRAINT "FK_f0e662d305651352be7c8232523"`);
    await queryRunner.query(`DROP TABLE "webhook_outbox"`);
  }
}
