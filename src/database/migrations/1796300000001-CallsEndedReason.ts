import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How each call ended (`endedReason`, contract section 17): "" for the calls made before it was kept. A column with
 * a constant default: PostgreSQL adds it without rewriting the table, however many calls there are.
 */
export class CallsEndedReason1796300000001 implements MigrationInterface {
  name = 'CallsEndedReason1796300000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" ADD "ended_reason" character varying(20) NOT NULL DEFAULT ''`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" DROP COLUMN "ended_reason"`);
  }
}
