import { MigrationInterface, QueryRunner } from 'typeorm';

export class KnowledgeBases1795327849133 implements MigrationInterface {
  name = 'KnowledgeBases1795327849133';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "knowledge_bases" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "name" character varying(200) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b7da0ee578e15ebb6213465440d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_0e933c06e8e27288be32196838" ON "knowledge_bases"  ("account_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "knowledge_base_sources" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "knowledge_base_id" integer NOT NULL, "name" character varying(200) NOT NULL, "type" character varying(10) NOT NULL, "content" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b064c59753f2cac854d27916aad" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_82111a9d7a65728390596bde97" ON "knowledge_base_sources"  ("knowledge_base_id") `);
    await queryRunner.query(
      `CREATE INDEX "IDX_6bbe316bdeffd305e1d6807464" ON "knowledge_base_sources"  ("account_id", "knowledge_base_id", "id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_bases" ADD CONSTRAINT "FK_71cfdb866b15277ed81e92905f7" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_base_sources" ADD CONSTRAINT "FK_3009eafd5069012bd9fcf87b495" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_base_sources" ADD CONSTRAINT "FK_82111a9d7a65728390596bde97b" FOREIGN KEY ("knowledge_base_id") REFERENCES "knowledge_bases"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP CONSTRAINT "FK_82111a9d7a65728390596bde97b"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP CONSTRAINT "FK_3009eafd5069012bd9fcf87b495"`);
    await queryRunner.query(`ALTER TABLE "knowledge_bases" DROP CONSTRAINT "FK_71cfdb866b15277ed81e92905f7"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_6bbe316bdeffd305e1d6807464"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_82111a9d7a65728390596bde97"`);
    await queryRunner.query(`DROP TABLE "knowledge_base_sources"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0e933c06e8e27288be32196838"`);
    await queryRunner.query(`DROP TABLE "knowledge_bases"`);
  }
}
