import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every server knows the prefixes of the keys that exist (src/auth/verified-keys.ts), so that an address blocked
 * for its bad keys still has its valid keys looked up. This trigger tells every server of a key made, whoever
 * makes it (the API, the CLI, an operator's SQL), when it commits: `NOTIFY api_key_created` with the key's prefix.
 */
export class ApiKeysNotifyCreation1796100000000 implements MigrationInterface {
  name = 'ApiKeysNotifyCreation1796100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION "api_keys_notify_created"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('api_key_created', NEW."prefix");
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER "TRG_api_keys_created" AFTER INSERT OR UPDATE OF "prefix" ON "api_keys" FOR EACH ROW EXECUTE FUNCTION "api_keys_notify_created"()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "TRG_api_keys_created" ON "api_keys"`);
    await queryRunner.query(`DROP FUNCTION "api_keys_notify_created"()`);
  }
}
