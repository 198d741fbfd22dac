import { MigrationInterface, QueryRunner } from 'typeorm';

export class Conversations1795429061098 implements MigrationInterface {
  name = 'Conversations1795429061098';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "conversations" ("account_id" integer NOT NULL, "id" uuid NOT NULL, "token_hash" character(64) NOT NULL, "agent_id" integer NOT NULL, "agent_name" character varying(200) NOT NULL, "reply_language" character varying(10) NOT NULL, "channel" character varying(20) NOT NULL, "website" character varying(2048) NOT NULL DEFAULT '', "allowed_domain" character varying(260), "name" character varying(200) NOT NULL DEFAULT '', "phone" character varying(50) NOT NULL DEFAULT '', "is_test" boolean NOT NULL DEFAULT false, "status" character varying(10) NOT NULL DEFAULT 'active', "message_count" integer NOT NULL DEFAULT '0', "visitor_message_count" integer NOT NULL DEFAULT '0', "replying_since" TIMESTAMP WITH TIME ZONE, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_message_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "ended_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_8e968cd26ba01f46fd814c3a628" PRIMARY KEY ("account_id", "id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_conversations_active_idle" ON "conversations"  ("last_message_at") WHERE "status" = 'active'`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_conversations_id" ON "conversations"  ("id") `);
    await queryRunner.query(
      `CREATE TABLE "conversation_messages" ("account_id" integer NOT NULL, "conversation_id" uuid NOT NULL, "seq" integer NOT NULL, "speaker" character varying(10) NOT NULL, "text" text NOT NULL, "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_747cf6a8b64d635481ae879c464" PRIMARY KEY ("account_id", "conversation_id", "seq"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "conversations" ADD CONSTRAINT "FK_948676628b2911729a80645685d" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "conversation_messages" ADD CONSTRAINT "FK_a72d8645d8225055cad09f7cc3f" FOREIGN KEY ("account_id", "conversation_id") REFERENCES "conversations"("account_id","id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversation_messages" DROP CONSTRAINT "FK_a72d8645d8225055cad09f7cc3f"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP CONSTRAINT "FK_948676628b2911729a80645685d"`);
    await queryRunner.query(`DROP TABLE "conversation_messages"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_conversations_id"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_conversations_active_idle"`);
    await queryRunner.query(`DROP TABLE "conversations"`);
  }
}
