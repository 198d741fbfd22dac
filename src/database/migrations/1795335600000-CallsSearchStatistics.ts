import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Finer statistics on the searched columns: with the default target (100) the planner misjudged how many of
 * an account's calls match a mid-frequency fragment and walked the account's ordered list instead of the
 * search index (docs/experiments.md). ANALYZE samples more rows
 * for these two columns from now on (autovacuum's next analyze, or an explicit ANALYZE, applies it).
 */
export class CallsSearchStatistics1795335600000 implements MigrationInterface {
  name = 'CallsSearchStatistics1795335600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" ALTER COLUMN "name" SET STATISTICS 1000, ALTER COLUMN "phone" SET STATISTICS 1000`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" ALTER COLUMN "name" SET STATISTICS -1, ALTER COLUMN "phone" SET STATISTICS -1`);
  }
}
