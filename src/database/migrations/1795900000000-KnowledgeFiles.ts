import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * File sources (contract section 16): the file's name, type and size on the source, and the file itself in
 * knowledge_file_chunks, deleted with its source; a partial index finds the uploads a stopped process left
 * unfinished (no source yet), for the sweep that removes them.
 */
export class KnowledgeFiles1795900000000 implements MigrationInterface {
  name = 'KnowledgeFiles1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "knowledge_file_chunks" ("account_id" integer NOT NULL, "file_id" uuid NOT NULL, "position" integer NOT NULL, "source_id" integer, "data" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_7c6cdb22c399127c0199ff4eb81" PRIMARY KEY ("account_id", "file_id", "position"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_b083fb4a4c45b3dd48e4ba0919" ON "knowledge_file_chunks" ("source_id") `);
    await queryRunner.query(
      `CREATE INDEX "IDX_knowledge_file_chunks_unfinished" ON "knowledge_file_chunks" ("created_at") WHERE "source_id" IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "file_name" character varying(255) NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "content_type" character varying(100) NOT NULL DEFAULT ''`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" ADD "bytes" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(
      `ALTER TABLE "knowledge_file_chunks" ADD CONSTRAINT "FK_d36405522e68472815659acd453" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "knowledge_file_chunks" ADD CONSTRAINT "FK_b083fb4a4c45b3dd48e4ba09197" FOREIGN KEY ("source_id") REFERENCES "knowledge_base_sources"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "knowledge_file_chunks" DROP CONSTRAINT "FK_b083fb4a4c45b3dd48e4ba09197"`);
    await queryRunner.query(`ALTER TABLE "knowledge_file_chunks" DROP CONSTRAINT "FK_d36405522e68472815659acd453"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "bytes"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "content_type"`);
    await queryRunner.query(`ALTER TABLE "knowledge_base_sources" DROP COLUMN "file_name"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_knowledge_file_chunks_unfinished"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_b083fb4a4c45b3dd48e4ba0919"`);
    await queryRunner.query(`DROP TABLE "knowledge_file_chunks"`);
  }
}
