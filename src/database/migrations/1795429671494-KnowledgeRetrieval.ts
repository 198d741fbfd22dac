import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * knowledge_token_stats (in how many of the account's passages each token occurs) and knowledge_corpus (how
 * many passages, how many tokens in all) follow every statement that inserts or deletes passages. Each
 * trigger takes the account's corpus row first, which orders concurrent writers of one account (no deadlock on
 * the token rows); a token whose last passage goes is deleted. Passages are never updated (replaced: delete,
 * insert).
 */
const STATISTICS_TRIGGERS = [
  `CREATE FUNCTION "knowledge_passages_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO knowledge_corpus AS c (account_id, passages, tokens)
       SELECT account_id, count(*), sum(token_count) FROM inserted GROUP BY account_id ORDER BY account_id
       ON CONFLICT (account_id) DO UPDATE SET passages = c.passages + excluded.passages, tokens = c.tokens + excluded.tokens;
     INSERT INTO knowledge_token_stats AS s (account_id, token, passages)
       SELECT account_id, token, count(*) FROM inserted, unnest(tsvector_to_array(tokens)) AS token GROUP BY account_id, token
       ON CONFLICT (account_id, token) DO UPDATE SET passages = s.passages + excluded.passages;
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION "knowledge_passages_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     UPDATE knowledge_corpus c SET passages = c.passages - d.passages, tokens = c.tokens - d.tokens
       FROM (SELECT account_id, count(*) AS passages, sum(token_count) AS tokens FROM deleted GROUP BY account_id) d
       WHERE c.account_id = d.account_id;
     -- One snapshot for both: the DELETE takes the tokens whose last passages go, the UPDATE the others.
     WITH d AS (SELECT account_id, token, count(*) AS passages FROM deleted, unnest(tsvector_to_array(tokens)) AS token GROUP BY account_id, token),
     gone AS (DELETE FROM knowledge_token_stats s USING d WHERE s.account_id = d.account_id AND s.token = d.token AND s.passages <= d.passages)
     UPDATE knowledge_token_stats s SET passages = s.passages - d.passages
       FROM d WHERE s.account_id = d.account_id AND s.token = d.token AND s.passages > d.passages;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER "knowledge_passages_inserted" AFTER INSERT ON "knowledge_passages" REFERENCING NEW TABLE AS inserted
     FOR EACH STATEMENT EXECUTE FUNCTION "knowledge_passages_inserted"()`,
  `CREATE TRIGGER "knowledge_passages_deleted" AFTER DELETE ON "knowledge_passages" REFERENCING OLD TABLE AS deleted
     FOR EACH STATEMENT EXECUTE FUNCTION "knowledge_passages_deleted"()`,
];

/**
 * Knowledge for the agents (contract section 10):
 * - sources gain `status`, `error` and `revision`; the sources that exist already are `pending`, so that the
 *   indexing sweep (src/knowledge-bases/source-indexing.ts) gives text sources their passages and fetches url ones;
 * - passages with their search tokens, in a GIN index that leads with the account (btree_gin), and the
 *   statistics that ranking reads (document frequencies, corpus size), kept by statement triggers with
 *   transition tables so that every insert and every delete, cascades included, is counted;
 * - agents' knowledge bases, with foreign keys that include the account (hence unique (account_id, id) on both
 *   sides, replacing the plain indexes on the same columns).
 */
export class KnowledgeRetrieval1795429671494 implements MigrationInterface {
  name = 'KnowledgeRetrieval1795429671494';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_489500aa68c2042034cca267cc"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0e933c06e8e27288be32196838"`);
    await queryRunner.query(
      `CREATE TABLE "knowledge_passages" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "knowledge_base_id" integer NOT NULL, "source_id" integer NOT NULL, "position" integer NOT NULL, "text" text NOT NULL, "tokens" tsvector NOT NULL, "token_count" integer NOT NULL, CONSTRAINT "PK_379aeca857a8e82818c54937806" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_4b745865251b8f7b557b628e09" ON "knowledge_passages"  ("source_id") `);
    await queryRunner.query(
      `CREATE TABLE "knowledge_token_stats" ("account_id" integer NOT NULL, "token" text NOT NULL, "passages" integer NOT NULL, CONSTRAINT "PK_061a1e495f222f542c1e8dd0e9b" PRIMARY KEY ("account_id", "token"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "knowledge_corpus" ("account_id" integer NOT NULL, "passages" integer NOT NULL, "tokens" bigint NOT NULL, CONSTRAINT "PK_28821b117e7df7dc8d661292b0d" PRIMARY KEY ("account_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "agent_knowledge_bases" ("account_id" integer NOT NULL, "agent_id" integer NOT NULL, "knowledge_base_id" integer NOT NULL, CONSTRAINT "PK_b5ca4faa79e7546e2fc52792f80" PRIMARY KEY ("account_id", "agent_id", "knowledge_base_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_72edfee7bb65d8aa2314adbf41" ON "agent_knowledge_bases"  ("account_id", "knowledge_base_id") `,
    );
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "status" character varying(10) NOT NULL DEFAULT 'pending'`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ALTER COLUMN "status" DROP DEFAULT`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "error" character varying(500) NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "revision" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_489500aa68c2042034cca267cc" ON "agents"  ("account_id", "id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_0e933c06e8e27288be32196838" ON "knowledge_bases"  ("account_id", "id") `);
    await queryRunner.query(
      `ALTER TABLE "knowledge_passages" ADD CONSTRAINT "FK_dcd05df2c0f765df225c8892362" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_passages" ADD CONSTRAINT "FK_4b745865251b8f7b557b628e090" FOREIGN KEY ("source_id") REFERENCES "knowledge_base_sources"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_token_stats" ADD CONSTRAINT "FK_7a709d524474cb6bc20c7478ca9" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_corpus" ADD CONSTRAINT "FK_28821b117e7df7dc8d661292b0d" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_knowledge_bases" ADD CONSTRAINT "FK_9d17fdc0374e898e51f12c80496" FOREIGN KEY ("agent_id", "account_id") REFERENCES "agents"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "agent_knowledge_bases" ADD CONSTRAINT "FK_72edfee7bb65d8aa2314adbf416" FOREIGN KEY ("knowledge_base_id", "account_id") REFERENCES "knowledge_bases"("id","account_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_knowledge_passages_search" ON "knowledge_passages" USING gin ("account_id", "tokens")`);
    await queryRunner.query(
      `CREATE INDEX "IDX_knowledge_base_sources_pending" ON "knowledge_base_sources" ("id") WHERE "status" = 'pending'`,
    );
    for (const statement of STATISTICS_TRIGGERS) await queryRunner.query(statement);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "knowledge_passages_deleted" ON "knowledge_passages"`);
    await queryRunner.query(`DROP TRIGGER "knowledge_passages_inserted" ON "knowledge_passages"`);
    await queryRunner.query(`DROP FUNCTION "knowledge_passages_deleted"`);
    await queryRunner.query(`DROP FUNCTION "knowledge_passages_inserted"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_knowledge_base_sources_pending"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_knowledge_passages_search"`);
    await queryRunner.query(`ALTER TABLE "agent_knowledge_bases" DROP CONSTRAINT "FK_72edfee7bb65d8aa2314adbf416"`);
    await queryRunner.query(`ALTER TABLE "agent_knowledge_bases" DROP CONSTRAINT "FK_9d17fdc0374e898e51f12c80496"`);
    await queryRunner.query(`ALTER TABLE "knowledge_corpus" DROP CONSTRAINT "FK_28821b117e7df7dc8d661292b0d"`);
    await queryRunner.query(`ALTER TABLE "knowledge_token_stats" DROP CONSTRAINT "FK_7a709d524474cb6bc20c7478ca9"`);
    await queryRunner.query(`ALTER TABLE "knowledge_passages" DROP CONSTRAINT "FK_4b745865251b8f7b557b628e090"`);
    await queryRunner.query(`ALTER TABLE "knowledge_passages" DROP CONSTRAINT "FK_dcd05df2c0f765df225c8892362"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0e933c06e8e27288be32196838"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_489500aa68c2042034cca267cc"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "revision"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "error"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "status"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_72edfee7bb65d8aa2314adbf41"`);
    await queryRunner.query(`DROP TABLE "agent_knowledge_bases"`);
    await queryRunner.query(`DROP TABLE "knowledge_corpus"`);
    await queryRunner.query(`DROP TABLE "knowledge_token_stats"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_4b745865251b8f7b557b628e09"`);
    await queryRunner.query(`DROP TABLE "knowledge_passages"`);
    await queryRunner.query(`CREATE INDEX "IDX_0e933c06e8e27288be32196838" ON "knowledge_bases" USING btree ("account_id", "id") `);
    await queryRunner.query(`CREATE INDEX "IDX_489500aa68c2042034cca267cc" ON "agents" USING btree ("account_id", "id") `);
  }
}
