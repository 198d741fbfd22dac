import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The greeting is trimmed now (a greeting of spaces only was sent as a widget conversation's first message):
 * the ones stored before are trimmed the same way (JavaScript's `trim`: every Unicode space and line break).
 */
export class BlankWidgetGreetings1795435000001 implements MigrationInterface {
  name = 'BlankWidgetGreetings1795435000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      UPDATE widget_sites SET widget_greeting = regexp_replace(widget_greeting, '^[\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]+|[\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]+$', '', 'g')
       WHERE widget_greeting ~ '^[\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]|[\\s\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]$'`);
  }

  async down(): Promise<void> {
    // The spaces trimmed are not kept.
  }
}
