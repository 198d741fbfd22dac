import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Spoken conversations (contract section 15): one voice socket per conversation across every instance, held as a
 * lease that its instance renews (one that died lets it expire); and where each message starts in the call's
 * recording.
 */
export class VoiceSockets1795800000000 implements MigrationInterface {
  name = 'VoiceSockets1795800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversations" ADD "voice_lease_id" uuid`);
    await queryRunner.query(`ALTER TABLE "conversations" ADD "voice_lease_until" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "conversation_messages" ADD "start_seconds" double precision`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversation_messages" DROP COLUMN "start_seconds"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "voice_lease_until"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "voice_lease_id"`);
  }
}
