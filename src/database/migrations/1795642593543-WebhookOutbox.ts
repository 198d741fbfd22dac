import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox proper: an event's transaction writes the event and a row here, and the relay turns the row into
 * the event's deliveries and their jobs (before, the event's transaction wrote those itself). Events recorded
 * before this migration already have their deliveries. No index but the key: the relay reads oldest first,
 * and the table holds only the events of the last few milliseconds.
 */
export class WebhookOutbox1795642593543 implements MigrationInterface {
  name = 'WebhookOutbox1795642593543';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_outbox" ("seq" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "account_id" integer NOT NULL, "event_id" uuid NOT NULL, CONSTRAINT "PK_622b8c371df8a82b5fba17997c1" PRIMARY KEY ("seq"))`);
    await queryRunner.query(`ALTER TABLE "webhook_outbox" ADD CONSTRAINT "FK_5e9afc18424db48c3612ab8c3c7" FOREIGN KEY ("account_id", "event_id") REFERENCES "webhook_events"("account_id","id") ON DELETE CASCADE ON UPDATE NO ACTION`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_outbox" DROP CONSTRAINT "FK_5e9afc18424db48c3612ab8c3c7"`);
    await queryRunner.query(`DROP TABLE "webhook_outbox"`);
  }
}
