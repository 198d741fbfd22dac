import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * calls.call_date to the millisecond, the precision of the API's timestamps. The list's order and its paging
 * cursors (`GET /calls?before=`) compare (call_date, id); a microsecond the client never sees would order two
 * calls of one visible millisecond against their ids, and a cursor made from the visible value would skip rows.
 * Values are rounded by PostgreSQL (this service only ever wrote whole milliseconds). The table is rewritten
 * once and its indexes rebuilt (PostgreSQL does that itself; the hand-written indexes keep their definitions).
 */
export class CallsCallDateMilliseconds1795428861465 implements MigrationInterface {
  name = 'CallsCallDateMilliseconds1795428861465';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" ALTER COLUMN "call_date" TYPE TIMESTAMP(3) WITH TIME ZONE`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" ALTER COLUMN "call_date" TYPE TIMESTAMP WITH TIME ZONE`);
  }
}
