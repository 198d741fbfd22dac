import { MigrationInterface, QueryRunner } from 'typeorm';

/** The Indic viramas and nuktas, as in src/calls/name-search-key.ts when this migration was written. */
const MARKS = '\u093C\u094D\u09BC\u09CD\u0A3C\u0A4D\u0ABC\u0ACD\u0B3C\u0B4D\u0BCD\u0C3C\u0C4D\u0CBC\u0CCD\u0D4D';
const NAME_SEARCH_KEY = `translate("name", '${MARKS}', '${'x'.repeat(MARKS.length)}')`;

/**
 * A trigram index on the name's search key (src/calls/name-search-key.ts: Indic viramas and nuktas replaced
 * with a letter), for searches written around such a mark: pg_trgm takes the marks for word breaks, so on
 * the name itself `श्र` had only the trigrams of `श` and `र`, so most of the script's names were candidates.
 * The statistics object gives the planner the key's value distribution, which it does not take from a
 * partial index's expression: without it the planner overestimated how many calls a search matches
 * (docs/experiments.md). It is filled by the next ANALYZE (autovacuum's, or the seed's).
 */
export class CallsNameSearchKey1795342800000 implements MigrationInterface {
  name = 'CallsNameSearchKey1795342800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_calls_account_name_key" ON "calls" USING gin ("account_id", (${NAME_SEARCH_KEY}) gin_trgm_ops) WHERE NOT "is_test"`,
    );
    await queryRunner.query(`CREATE STATISTICS "STAT_calls_name_key" ON (${NAME_SEARCH_KEY}) FROM "calls"`);
    await queryRunner.query(`ALTER STATISTICS "STAT_calls_name_key" SET STATISTICS 1000`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP STATISTICS "STAT_calls_name_key"`);
    await queryRunner.query(`DROP INDEX "IDX_calls_account_name_key"`);
  }
}
