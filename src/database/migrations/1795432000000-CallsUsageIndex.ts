import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /usage` over a year of a busy account adds up tens of thousands of calls: through the list index it
 * read one table row per call for the duration and the agent, so both are included in an index of the range's
 * columns and the aggregate reads the index alone (docs/experiments.md).
 */
export class CallsUsageIndex1795432000000 implements MigrationInterface {
  name = 'CallsUsageIndex1795432000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_usage" ON "calls" ("account_id", "call_date") INCLUDE ("agent_id", "duration_seconds") WHERE NOT "is_test"`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_calls_account_usage"`);
  }
}
