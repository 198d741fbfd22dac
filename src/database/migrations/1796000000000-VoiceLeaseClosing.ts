import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A voice socket's lease says when its socket has closed and its call is being stored: a new socket for the
 * conversation then waits for the lease instead of being refused (4409) as a second socket is. A column with a
 * constant default: no table rewrite.
 */
export class VoiceLeaseClosing1796000000000 implements MigrationInterface {
  name = 'VoiceLeaseClosing1796000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversations" ADD "voice_lease_closing" boolean NOT NULL DEFAULT false`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "voice_lease_closing"`);
  }
}
