import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The caps on active conversations (CONVERSATION_MAX_ACTIVE_PER_SITE, _PER_ACCOUNT) are counted where a
 * conversation starts: a widget conversation now keeps its site's id (no foreign key: like its agent's, it is
 * history), and the active conversations of an account, and of one of its sites, are read from a partial index.
 * Conversations started before have no site (they end within CONVERSATION_IDLE_SECONDS anyway).
 */
export class ConversationSites1795700000000 implements MigrationInterface {
  name = 'ConversationSites1795700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversations" ADD "site_id" integer`);
    await queryRunner.query(
      `CREATE INDEX "IDX_conversations_active_site" ON "conversations" ("account_id", "site_id") WHERE "status" = 'active'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_conversations_active_site"`);
    await queryRunner.query(`ALTER TABLE "conversations" DROP COLUMN "site_id"`);
  }
}
