import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `allowed_domain` holds the longest valid value, `*.` + a 253-character host + `:65535` (261 characters;
 * 260 made that value a 500). Written by hand: TypeORM generates DROP COLUMN + ADD COLUMN for a length
 * change, which would erase every site's domain. Widening a varchar neither rewrites the table nor its indexes.
 */
export class AllowedDomainLength1795428461087 implements MigrationInterface {
  name = 'AllowedDomainLength1795428461087';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "widget_sites" ALTER COLUMN "allowed_domain" TYPE character varying(261)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "widget_sites" ALTER COLUMN "allowed_domain" TYPE character varying(260)`);
  }
}
