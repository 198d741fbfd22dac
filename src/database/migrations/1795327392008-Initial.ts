import { MigrationInterface, QueryRunner } from 'typeorm';

export class Initial1795327392008 implements MigrationInterface {
  name = 'Initial1795327392008';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "accounts" ("id" SERIAL NOT NULL, "name" character varying(200) NOT NULL, "is_platform" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5a7a02c20412299d198e097a8fe" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "api_keys" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "prefix" character varying(16) NOT NULL, "key_hash" character(64) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "revoked_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_57384430aa1959f4578046c9b8" ON "api_keys"  ("key_hash") `);
    await queryRunner.query(`CREATE INDEX "IDX_73f8bd63360cace23584bf849f" ON "api_keys"  ("account_id", "id") `);
    await queryRunner.query(
      `ALTER TABLE "api_keys" ADD CONSTRAINT "FK_decaf331589778e33441b2a8d9e" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" DROP CONSTRAINT "FK_decaf331589778e33441b2a8d9e"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_73f8bd63360cace23584bf849f"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_57384430aa1959f4578046c9b8"`);
    await queryRunner.query(`DROP TABLE "api_keys"`);
    await queryRunner.query(`DROP TABLE "accounts"`);
  }
}
