import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Latency, per turn and per call (contract section 19): an agent's spoken reply keeps where its turn's time went
 * (`conversation_messages.latency_ms`), and a spoken call its turns' summary (`calls.latency`). Nullable columns
 * without a default: PostgreSQL adds them without rewriting either table; the rows before stay null.
 */
export class Latency1796500000000 implements MigrationInterface {
  name = 'Latency1796500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "conversation_messages" ADD "latency_ms" jsonb`);
    await queryRunner.query(`ALTER TABLE "calls" ADD "latency" jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "calls" DROP COLUMN "latency"`);
    await queryRunner.query(`ALTER TABLE "conversation_messages" DROP COLUMN "latency_ms"`);
  }
}
