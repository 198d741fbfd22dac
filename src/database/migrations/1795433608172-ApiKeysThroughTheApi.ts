import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * API keys managed through the API (contract section 13): a name, scopes, an expiry and the time of last use.
 * The keys made by the CLI before get the name "CLI key" and both scopes (constant defaults: no table rewrite,
 * then dropped, so that every new key states its own). The revocation trigger also fires when a key's expiry or
 * scopes change (an operator's SQL), so that no server keeps answering from its cache with the old ones.
 */
export class ApiKeysThroughTheApi1795433608172 implements MigrationInterface {
  name = 'ApiKeysThroughTheApi1795433608172';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "name" character varying(100) NOT NULL DEFAULT 'CLI key'`);
    await queryRunner.query(`ALTER TABLE "api_keys" ALTER COLUMN "name" DROP DEFAULT`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "scopes" text array NOT NULL DEFAULT ARRAY['read', 'write']::text[]`);
    await queryRunner.query(`ALTER TABLE "api_keys" ALTER COLUMN "scopes" DROP DEFAULT`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "expires_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD "last_used_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `ALTER TABLE "api_keys" ADD CONSTRAINT "CHK_api_keys_scopes" CHECK (cardinality("scopes") > 0 AND "scopes" <@ ARRAY['read', 'write']::text[])`,
    );
    await queryRunner.query(`DROP TRIGGER "TRG_api_keys_revoked" ON "api_keys"`);
    await queryRunner.query(`CREATE TRIGGER "TRG_api_keys_revoked" AFTER UPDATE OF "revoked_at", "key_hash", "account_id", "expires_at", "scopes" ON "api_keys" FOR EACH ROW
      WHEN (OLD."revoked_at" IS DISTINCT FROM NEW."revoked_at" OR OLD."key_hash" IS DISTINCT FROM NEW."key_hash" OR OLD."account_id" IS DISTINCT FROM NEW."account_id"
            OR OLD."expires_at" IS DISTINCT FROM NEW."expires_at" OR OLD."scopes" IS DISTINCT FROM NEW."scopes")
      EXECUTE FUNCTION "api_keys_notify_revoked"()`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "TRG_api_keys_revoked" ON "api_keys"`);
    await queryRunner.query(`CREATE TRIGGER "TRG_api_keys_revoked" AFTER UPDATE OF "revoked_at", "key_hash", "account_id" ON "api_keys" FOR EACH ROW
      WHEN (OLD."revoked_at" IS DISTINCT FROM NEW."revoked_at" OR OLD."key_hash" IS DISTINCT FROM NEW."key_hash" OR OLD."account_id" IS DISTINCT FROM NEW."account_id")
      EXECUTE FUNCTION "api_keys_notify_revoked"()`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP CONSTRAINT "CHK_api_keys_scopes"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "last_used_at"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "expires_at"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "scopes"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP COLUMN "name"`);
  }
}
