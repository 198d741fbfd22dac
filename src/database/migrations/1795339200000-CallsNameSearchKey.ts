import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The search index holds the name's search key (src/calls/name-search-key.ts: Indic viramas and nuktas
 * replaced with a letter, one character for one) instead of the name, so that a fragment written around a
 * virama, such as `श्र`, has trigrams of its own instead of those of the single letters around it
 * (BENCHMARKS.md, "Performance"). The expression must stay exactly the one `nameSearchKeySql` writes.
 */
export class CallsNameSearchKey1795339200000 implements MigrationInterface {
  name = 'CallsNameSearchKey1795339200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_calls_account_search"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_search" ON "calls" USING gin ("account_id", (translate("name", '़়਼઼଼఼಼्্੍્୍்్್്', 'xxxxxxxxxxxxxxxx')) gin_trgm_ops, "phone" gin_trgm_ops, (regexp_replace("phone", '[^0-9]', '', 'g')) gin_trgm_ops) WHERE NOT "is_test"`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_calls_account_search"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_search" ON "calls" USING gin ("account_id", "name" gin_trgm_ops, "phone" gin_trgm_ops, (regexp_replace("phone", '[^0-9]', '', 'g')) gin_trgm_ops) WHERE NOT "is_test"`,
    );
  }
}
