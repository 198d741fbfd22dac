import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agent versions (contract section 19): the table, immutable through a trigger that refuses every UPDATE (the API
 * sends none; an operator's SQL is refused too), the agent's latest published version, and the version each
 * conversation runs and each call was answered by (nullable columns without a default: no table rewrite).
 */
export class AgentVersions1796400000000 implements MigrationInterface {
  name = 'AgentVersions1796400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "agent_versions" ("account_id" integer NOT NULL, "agent_id" integer NOT NULL, "version" integer NOT NULL, "description" character varying(500) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "name" character varying(200) NOT NULL, "agent_description" character varying(2000) NOT NULL, "model" character varying(100) NOT NULL, "voice" character varying(50) NOT NULL, "language" character varying(10) NOT NULL, "system_prompt" text NOT NULL, "knowledge_base_ids" integer array NOT NULL, "tool_ids" integer array NOT NULL, CONSTRAINT "PK_66dd3a2b9a997074bfbb6fb3593" PRIMARY KEY ("account_id", "agent_id", "version"))`,
    );
    await queryRunner.query(`ALTER TABLE "agents" ADD "published_version" integer`);
    await queryRunner.query(`ALTER TABLE "calls" ADD "agent_version" integer`);
    await queryRunner.query(`ALTER TABLE "conversations" ADD "agent_version" integer`);
    await queryRunner.query(
      `ALTER TABLE "agent_versions" ADD CONSTRAINT "FK_41b7290b42b6e6c19c16c13b319" FOREIGN KEY ("agent_id", "account_id") REFERENCES "agents"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE FUNCTION "agent_versions_refuse_update"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'agent versions are immutable' USING ERRCODE = 'restrict_violation';
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER "TRG_agent_versions_immutable" BEFORE UPDATE ON "agent_versions" FOR EACH ROW EXECUTE FUNCTION "agent_versions_refuse_update"()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "agent_versions" DROP CONSTRAINT "FK_41b7290b42b6e6c19c16c13b319"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "agent_version"`);
    await queryRunner.query(`ALTER TABLE "calls" DROP COLUMN "agent_version"`);
    await queryRunner.query(`ALTER TABLE "agents" DROP COLUMN "published_version"`);
    await queryRunner.query(`DROP TABLE "agent_versions"`);
    await queryRunner.query(`DROP FUNCTION "agent_versions_refuse_update"()`);
  }
}
