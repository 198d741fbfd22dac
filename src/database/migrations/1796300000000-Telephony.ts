import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Telephony (contract section 17): the account's phone numbers (the carrier's auth token sealed, never readable
 * from a copy of the database alone), the phone calls beside their conversations (the carrier's CallSid and the
 * media stream's one-time token, as a hash), each status the carrier reported once, and a conversation's call
 * type (`web` for every conversation made before: widget and API conversations).
 */
export class Telephony1796300000000 implements MigrationInterface {
  name = 'Telephony1796300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "phone_numbers" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "agent_id" integer, "number" character varying(16) NOT NULL, "provider" character varying(20) NOT NULL, "label" character varying(200) NOT NULL, "greeting" character varying(500) NOT NULL, "twilio_account_sid" character varying(34) NOT NULL, "twilio_auth_token_sealed" bytea NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_a72cf9a1834a1417e195fdd2c02" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_305ba30735c76d975c5784367c" ON "phone_numbers" ("agent_id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_cc136913ef4998595acd3fbb2d" ON "phone_numbers" ("account_id", "number") `);
    await queryRunner.query(`CREATE INDEX "IDX_8bbb81b55222f9bca6a78222b0" ON "phone_numbers" ("account_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "phone_calls" ("account_id" integer NOT NULL, "conversation_id" uuid NOT NULL, "phone_number_id" integer NOT NULL, "call_sid" character varying(34), "stream_token_hash" character(64) NOT NULL, "stream_token_expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "stream_connected_at" TIMESTAMP WITH TIME ZONE, "answered_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5e79b43e6caf5907289b6e5e22b" PRIMARY KEY ("account_id", "conversation_id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_042783ba3f7e8693d6ab78ef22" ON "phone_calls" ("stream_token_hash") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_phone_calls_call_sid" ON "phone_calls" ("account_id", "call_sid") `);
    await queryRunner.query(
      `CREATE TABLE "phone_call_statuses" ("account_id" integer NOT NULL, "call_sid" character varying(34) NOT NULL, "status" character varying(20) NOT NULL, "duration_seconds" integer, "received_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_40ca3e58d13dd997bf393713ba1" PRIMARY KEY ("account_id", "call_sid", "status"))`,
    );
    await queryRunner.query(`ALTER TABLE "conversations" ADD "call_type" character varying(20) NOT NULL DEFAULT 'web'`);
    await queryRunner.query(
      `ALTER TABLE "phone_numbers" ADD CONSTRAINT "FK_7b9fdfaceac423540698f0e62d1" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "phone_numbers" ADD CONSTRAINT "FK_305ba30735c76d975c5784367cc" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "phone_calls" ADD CONSTRAINT "FK_5e79b43e6caf5907289b6e5e22b" FOREIGN KEY ("account_id", "conversation_id") REFERENCES "conversations"("account_id","id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "phone_call_statuses" ADD CONSTRAINT "FK_bde95416c89cbc7bec24358ab1e" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "phone_call_statuses" DROP CONSTRAINT "FK_bde95416c89cbc7bec24358ab1e"`);
    await queryRunner.query(`ALTER TABLE "phone_calls" DROP CONSTRAINT "FK_5e79b43e6caf5907289b6e5e22b"`);
    await queryRunner.query(`ALTER TABLE "phone_numbers" DROP CONSTRAINT "FK_305ba30735c76d975c5784367cc"`);
    await queryRunner.query(`ALTER TABLE "phone_numbers" DROP CONSTRAINT "FK_7b9fdfaceac423540698f0e62d1"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "call_type"`);
    await queryRunner.query(`DROP TABLE "phone_call_statuses"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_phone_calls_call_sid"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_042783ba3f7e8693d6ab78ef22"`);
    await queryRunner.query(`DROP TABLE "phone_calls"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_8bbb81b55222f9bca6a78222b0"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_cc136913ef4998595acd3fbb2d"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_305ba30735c76d975c5784367c"`);
    await queryRunner.query(`DROP TABLE "phone_numbers"`);
  }
}
