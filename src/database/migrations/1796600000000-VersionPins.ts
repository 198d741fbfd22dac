import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A widget site or a phone number may pin a version of its agent (contract section 19): `agent_version`, nullable,
 * checked against the row's agent by the service (AgentVersionsService.pin). A row left without an agent (deleted:
 * agent_id's foreign key sets it null) loses its pin by trigger. (No composite foreign key to agent_versions: the
 * entities could not declare one that nulls only agent_version, and test/schema-drift.spec.ts holds them to the
 * migrations; versions are never updated nor deleted but with their agent, so a checked pin stays valid.)
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
      await queryRunner.query(`ALTER TABLE "${table}" ADD "agent_version" integer`);
      await queryRunner.query(
        `CREATE TRIGGER "TRG_${table}_pin_follows_agent" BEFORE INSERT OR UPDATE ON "${table}" FOR EACH ROW EXECUTE FUNCTION "agent_version_pin_follows_agent"()`,
      );
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['phone_numbers', 'widget_sites']) {
      await queryRunner.query(`DROP TRIGGER "TRG_${table}_pin_follows_agent" ON "${table}"`);
      await queryRunner.query(`ALTER TABLE "${table}" DROP COLUMN "agent_version"`);
    }
    await queryRunner.query(`DROP FUNCTION "agent_version_pin_follows_agent"()`);
  }
}
