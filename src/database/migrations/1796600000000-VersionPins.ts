import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A widget site or a phone number may pin a version of its agent (contract section 19): `agent_version`, nullable.
 * The foreign key makes a pin a version of the row's own agent and account. A row left without an agent (its agent
 * deleted: agent_id's own foreign key sets it null first, so this one no longer matches) loses its pin by trigger.
 */
export class VersionPins1796600000000 implements MigrationInterface {
  name = 'VersionPins1796600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION "agent_version_pin_follows_agent"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.agent_id IS NULL THEN NEW.agent_version := NULL; END IF;
        RETURN NEW;
      END $$`);
    for (const table of ['widget_sites', 'phone_numbers']) {
      await queryRunner.query(
        `CREATE TRIGGER "TRG_${table}_pin_follows_agent" BEFORE INSERT OR UPDATE ON "${table}" FOR EACH ROW EXECUTE FUNCTION "agent_version_pin_follows_agent"()`,
      );
      await queryRunner.query(`ALTER TABLE "${table}" ADD "agent_version" integer`);
      await queryRunner.query(
        `ALTER TABLE "${table}" ADD CONSTRAINT "FK_${table}_agent_version" FOREIGN KEY ("account_id", "agent_id", "agent_version")
           REFERENCES "agent_versions"("account_id", "agent_id", "version") ON DELETE SET NULL ("agent_version")`,
      );
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['phone_numbers', 'widget_sites']) {
      await queryRunner.query(`ALTER TABLE "${table}" DROP CONSTRAINT "FK_${table}_agent_version"`);
      await queryRunner.query(`ALTER TABLE "${table}" DROP COLUMN "agent_version"`);
      await queryRunner.query(`DROP TRIGGER "TRG_${table}_pin_follows_agent" ON "${table}"`);
    }
    await queryRunner.query(`DROP FUNCTION "agent_version_pin_follows_agent"()`);
  }
}
