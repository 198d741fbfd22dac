import { MigrationInterface, QueryRunner } from 'typeorm';

/** The parts of spoken conversations' recordings, one per voice socket, until the call's recording is assembled. */
export class RecordingSegments1795800000001 implements MigrationInterface {
  name = 'RecordingSegments1795800000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "conversation_recording_segments" ("account_id" integer NOT NULL, "conversation_id" uuid NOT NULL, "seq" integer NOT NULL, "storage_key" character varying(200) NOT NULL, "seconds" double precision NOT NULL, "bytes" bigint NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_conversation_recording_segments" PRIMARY KEY ("account_id", "conversation_id", "seq"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "conversation_recording_segments" ADD CONSTRAINT "FK_d97786a9fa4326546e8ac0148e8" FOREIGN KEY ("account_id", "conversation_id") REFERENCES "conversations"("account_id","id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "conversation_recording_segments"`);
  }
}
