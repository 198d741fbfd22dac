import { MigrationInterface, QueryRunner } from 'typeorm';

/** Tools (contract section 18), and agent_tools: an agent's tools, both foreign keys with the account in them. */
export class Tools1796243000000 implements MigrationInterface {
  name = 'Tools1796243000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "tools" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "type" character varying(20) NOT NULL, "name" character varying(64) NOT NULL, "description" character varying(1000) NOT NULL, "parameters" json, "url" character varying(2000), "timeout_seconds" integer, "speak_while_running" character varying(200), "number" character varying(16), "secret" character varying(100), "previous_secret" character varying(100), "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_e23d56734caad471277bad8bf85" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_7d1ca46b0463e624696d9277a4" ON "tools"  ("account_id", "name") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_d62f0702a18411853a22586a6b" ON "tools"  ("account_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "agent_tools" ("account_id" integer NOT NULL, "agent_id" integer NOT NULL, "tool_id" integer NOT NULL, CONSTRAINT "PK_b704ff743a5b993e64798ebcbb8" PRIMARY KEY ("account_id", "agent_id", "tool_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_afa46c45090f100eae8888152d" ON "agent_tools"  ("account_id", "tool_id") `);
    await queryRunner.query(
      `ALTER TABLE "tools" ADD CONSTRAINT "FK_09ad27caa87d76c95ccbccb8cc3" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_tools" ADD CONSTRAINT "FK_9664833e7347fbe75db143cb0a0" FOREIGN KEY ("agent_id", "account_id") REFERENCES "agents"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_tools" ADD CONSTRAINT "FK_afa46c45090f100eae8888152d1" FOREIGN KEY ("tool_id", "account_id") REFERENCES "tools"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agent_tools" DROP CONSTRAINT "FK_afa46c45090f100eae8888152d1"`);
    await queryRunner.query(`ALTER TABLE "agent_tools" DROP CONSTRAINT "FK_9664833e7347fbe75db143cb0a0"`);
    await queryRunner.query(`ALTER TABLE "tools" DROP CONSTRAINT "FK_09ad27caa87d76c95ccbccb8cc3"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_afa46c45090f100eae8888152d"`);
    await queryRunner.query(`DROP TABLE "agent_tools"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_d62f0702a18411853a22586a6b"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_7d1ca46b0463e624696d9277a4"`);
    await queryRunner.query(`DROP TABLE "tools"`);
  }
}
