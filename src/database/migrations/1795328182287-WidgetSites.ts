import { MigrationInterface, QueryRunner } from 'typeorm';

export class WidgetSites1795328182287 implements MigrationInterface {
  name = 'WidgetSites1795328182287';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "widget_sites" ("id" SERIAL NOT NULL, "account_id" integer NOT NULL, "agent_id" integer, "name" character varying(200) NOT NULL, "allowed_domain" character varying(260) NOT NULL, "widget_position" character varying(20) NOT NULL, "widget_label" character varying(40) NOT NULL, "widget_avatar" character varying(20) NOT NULL, "widget_greeting" character varying(500) NOT NULL, "widget_mode" character varying(10) NOT NULL, "widget_ask_name" boolean NOT NULL, "widget_ask_phone" boolean NOT NULL, "site_key" character varying(64) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_85886413f71c2370f5c2e9a162a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "IDX_0d725eef471522cfdf80c71154" ON "widget_sites"  ("agent_id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "IDX_94dcd4222ac9a810add2eee85b" ON "widget_sites"  ("site_key") `);
    await queryRunner.query(`CREATE INDEX "IDX_bdb8d6abbb551b86843812c07b" ON "widget_sites"  ("account_id", "id") `);
    await queryRunner.query(
      `ALTER TABLE "widget_sites" ADD CONSTRAINT "FK_aa3883c910a4adbd4aa026b9221" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "widget_sites" ADD CONSTRAINT "FK_0d725eef471522cfdf80c71154c" FOREIGN KEY ("agent_id") REFERENCES "agents"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "widget_sites" DROP CONSTRAINT "FK_0d725eef471522cfdf80c71154c"`);
    await queryRunner.query(`ALTER TABLE "widget_sites" DROP CONSTRAINT "FK_aa3883c910a4adbd4aa026b9221"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_bdb8d6abbb551b86843812c07b"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_94dcd4222ac9a810add2eee85b"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_0d725eef471522cfdf80c71154"`);
    await queryRunner.query(`DROP TABLE "widget_sites"`);
  }
}
