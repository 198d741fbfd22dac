import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The calls table. The indexes after the table are hand-written (TypeORM cannot express DESC columns,
 * partial indexes or GIN operator classes); the entity declares them with `synchronize: false`.
 * Every index leads with account_id, since every query reads one account's calls (their plans:
 * docs/benchmarks.md, "Calls queries").
 */
export class Calls1795327895093 implements MigrationInterface {
  name = 'Calls1795327895093';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS btree_gin`);
    await queryRunner.query(
      `CREATE TABLE "calls" ("account_id" integer NOT NULL, "id" uuid NOT NULL DEFAULT gen_random_uuid(), "agent_id" integer, "agent_name" character varying(200) NOT NULL DEFAULT '', "name" character varying(200) NOT NULL DEFAULT '', "phone" character varying(50) NOT NULL DEFAULT '', "email" character varying(320) NOT NULL DEFAULT '', "status" character varying(100) NOT NULL DEFAULT '', "call_status" character varying(100) NOT NULL DEFAULT '', "sentiment" character varying(100) NOT NULL DEFAULT '', "channel" character varying(100) NOT NULL DEFAULT '', "call_type" character varying(100) NOT NULL DEFAULT '', "website" character varying(2048) NOT NULL DEFAULT '', "reply_language" character varying(100) NOT NULL DEFAULT '', "call_date" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "duration_seconds" double precision NOT NULL DEFAULT '0', "feedback" jsonb, "extracted_data" jsonb NOT NULL DEFAULT '{}', "transcript" jsonb NOT NULL DEFAULT '[]', "is_test" boolean NOT NULL DEFAULT false, "recording_key" character varying(1024), CONSTRAINT "PK_4123b12e65b3902cf657208f424" PRIMARY KEY ("account_id", "id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "calls" ADD CONSTRAINT "FK_232874c18bda8e084735ca543fb" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // GET /calls (and its days filter): the list in API order, test calls left out.
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_list" ON "calls" ("account_id", "call_date" DESC, "id" DESC) WHERE NOT "is_test"`,
    );
    // GET /calls?agentId=
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_agent" ON "calls" ("account_id", "agent_id", "call_date" DESC, "id" DESC) WHERE NOT "is_test"`,
    );
    // GET /calls?search=: trigrams of the name, the phone and the phone's digits, inside one account.
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_search" ON "calls" USING gin ("account_id", "name" gin_trgm_ops, "phone" gin_trgm_ops, (regexp_replace("phone", '[^0-9]', '', 'g')) gin_trgm_ops) WHERE NOT "is_test"`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_calls_account_search"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_calls_account_agent"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_calls_account_list"`);
    await queryRunner.query(`ALTER TABLE "calls" DROP CONSTRAINT "FK_232874c18bda8e084735ca543fb"`);
    await queryRunner.query(`DROP TABLE "calls"`);
  }
}
