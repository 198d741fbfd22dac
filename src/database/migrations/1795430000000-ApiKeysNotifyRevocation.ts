import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every server keeps a cache of verified keys and empties it on `NOTIFY api_key_revoked` (src/auth/verified-keys.ts).
 * These triggers send it whoever revokes or deletes a key, an operator's SQL included, in the revoking transaction:
 * it arrives when the change commits. Also when a key's hash or account changes. The payload is empty, so that
 * PostgreSQL folds the notifications of one transaction into one (a mass revocation sends one).
 */
export class ApiKeysNotifyRevocation1795430000000 implements MigrationInterface {
  name = 'ApiKeysNotifyRevocation1795430000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION "api_keys_notify_revoked"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('api_key_revoked', '');
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER "TRG_api_keys_revoked" AFTER UPDATE OF "revoked_at", "key_hash", "account_id" ON "api_keys" FOR EACH ROW
      WHEN (OLD."revoked_at" IS DISTINCT FROM NEW."revoked_at" OR OLD."key_hash" IS DISTINCT FROM NEW."key_hash" OR OLD."account_id" IS DISTINCT FROM NEW."account_id")
      EXECUTE FUNCTION "api_keys_notify_revoked"()`);
    await queryRunner.query(
      `CREATE TRIGGER "TRG_api_keys_deleted" AFTER DELETE ON "api_keys" FOR EACH ROW EXECUTE FUNCTION "api_keys_notify_revoked"()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "TRG_api_keys_deleted" ON "api_keys"`);
    await queryRunner.query(`DROP TRIGGER "TRG_api_keys_revoked" ON "api_keys"`);
    await queryRunner.query(`DROP FUNCTION "api_keys_notify_revoked"()`);
  }
}
