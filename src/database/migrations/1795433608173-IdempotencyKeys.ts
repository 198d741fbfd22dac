import { MigrationInterface, QueryRunner } from 'typeorm';

/** The Idempotency-Key records of the management API's POSTs (contract section 12), kept 24 hours. */
export class IdempotencyKeys1795433608173 implements MigrationInterface {
  name = 'IdempotencyKeys1795433608173';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "idempotency_keys" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "key_hash" character(64) NOT NULL, "request_hash" character(64) NOT NULL, "claim" uuid NOT NULL, "status_code" integer, "content_type" character varying(200), "body" bytea, CONSTRAINT "PK_8ad20779ad0411107a56e53d0f6" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_5e72f040fdc5efc8eef52a388c" ON "idempotency_keys"  ("created_at") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_2fa61d56acbcadf83b651faa4f" ON "idempotency_keys"  ("account_id", "key_hash") `);
    await queryRunner.query(
      `ALTER TABLE "idempotency_keys" ADD CONSTRAINT "FK_2fce765c0a9afca71085de67556" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "idempotency_keys" DROP CONSTRAINT "FK_2fce765c0a9afca71085de67556"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_2fa61d56acbcadf83b651faa4f"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_5e72f040fdc5efc8eef52a388c"`);
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
  }
}
