import { MigrationInterface, QueryRunner } from 'typeorm';

export class Agents1795327686619 implements MigrationInterface {
  name = 'Agents1795327686619';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "agents" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "name" character varying(200) NOT NULL, "description" character varying(2000) NOT NULL, "model" character varying(100) NOT NULL, "voice" character varying(50) NOT NULL, "language" character varying(10) NOT NULL, "system_prompt" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9c653f28ae19c5884d5baf6a1d9" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_489500aa68c2042034cca267cc" ON "agents"  ("account_id", "id") `);
    await queryRunner.query(
      `ALTER TABLE "agents" ADD CONSTRAINT "FK_df520decc9e003a843d8edd9867" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agents" DROP CONSTRAINT "FK_df520decc9e003a843d8edd9867"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_489500aa68c2042034cca267cc"`);
    await queryRunner.query(`DROP TABLE "agents"`);
  }
}
