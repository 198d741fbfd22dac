import { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1795430249942 implements MigrationInterface {
  name = 'Webhooks1795430249942';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhooks" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "url" character varying(2000) NOT NULL, "events" character varying(40) array NOT NULL, "description" character varying(2000) NOT NULL, "enabled" boolean NOT NULL, "secret" character varying(100) NOT NULL, "previous_secret" character varying(100), "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9e8795cfc899ab7bdaa831e8527" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_2fcc13e7f99c175793b6066753" ON "webhooks"  ("account_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "webhook_events" ("account_id" integer NOT NULL, "id" uuid NOT NULL, "type" character varying(40) NOT NULL, "call_id" uuid, "body" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_8de8940a09ddd9b980609d16240" PRIMARY KEY ("account_id", "id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_0aaba2b12afd280b931bffacab" ON "webhook_events"  ("account_id", "call_id") WHERE "call_id" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("account_id" integer NOT NULL, "id" uuid NOT NULL DEFAULT gen_random_uuid(), "webhook_id" integer NOT NULL, "event_id" uuid NOT NULL, "status" character varying(10) NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "last_status_code" integer, "last_error" character varying(300), "next_attempt_at" TIMESTAMP WITH TIME ZONE DEFAULT now(), "locked_until" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_775b70378c1310e3bb420312e9f" PRIMARY KEY ("account_id", "id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_86acab2a4a9834b4311a6ef802" ON "webhook_deliveries"  ("account_id", "webhook_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_b51022a24621cfb2bd8e97ca2e" ON "webhook_deliveries"  ("account_id", "event_id", "webhook_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "webhooks" ADD CONSTRAINT "FK_295b5a3ff343825baa12cfdcba0" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_events" ADD CONSTRAINT "FK_eac7925bcd823c210448e216cea" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_28996dd6a58e4a7c4ada9c471ed" FOREIGN KEY ("webhook_id", "account_id") REFERENCES "webhooks"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_a7ce828feb1b3d7e1ff5270ee1c" FOREIGN KEY ("account_id", "event_id") REFERENCES "webhook_events"("account_id","id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_a7ce828feb1b3d7e1ff5270ee1c"`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_28996dd6a58e4a7c4ada9c471ed"`);
    await queryRunner.query(`ALTER TABLE "webhook_events" DROP CONSTRAINT "FK_eac7925bcd823c210448e216cea"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP CONSTRAINT "FK_295b5a3ff343825baa12cfdcba0"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_b51022a24621cfb2bd8e97ca2e"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_86acab2a4a9834b4311a6ef802"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0aaba2b12afd280b931bffacab"`);
    await queryRunner.query(`DROP TABLE "webhook_events"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_2fcc13e7f99c175793b6066753"`);
    await queryRunner.query(`DROP TABLE "webhooks"`);
  }
}
