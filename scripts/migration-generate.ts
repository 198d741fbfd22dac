/**
 * `npm run migration:generate -- AddWidgetSites`
 * Migrates a throwaway embedded PostgreSQL, compares it with the entities and writes the difference as a
 * new migration under src/database/migrations, then rewrites the migrations index.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { pendingSchemaChanges, runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from './throwaway-postgres';

const MIGRATIONS_DIR = path.join(__dirname, '..', 'src', 'database', 'migrations');

function writeIndex(): void {
  const classes = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+-[\w-]+\.ts$/.test(file))
    .sort()
    .map((file) => {
      const source = fs.readFileSync(path.join(MIGRATIONS_DIR, file), 'utf8');
      const className = /export class (\w+)/.exec(source)![1];
      return { file: file.replace(/\.ts$/, ''), className };
    });
  const lines = [
    '// Every migration, oldest first. `npm run migration:generate -- Name` rewrites this list.',
    ...classes.map(({ file, className }) => `import { ${className} } from './${file}';`),
    '',
    `export const MIGRATIONS = [${classes.map(({ className }) => className).join(', ')}];`,
    '',
  ];
  fs.writeFileSync(path.join(MIGRATIONS_DIR, 'index.ts'), lines.join('\n'));
}

const quote = (sql: string) => '`' + sql.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${') + '`';

async function main(): Promise<void> {
  const name = process.argv[2];
  if (!name || !/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new Error('Usage: npm run migration:generate -- PascalCaseName');
  const config = loadConfig();
  const postgres = await startThrowawayPostgres();
  try {
    await runMigrations(postgres.url, config);
    const { up, down } = await pendingSchemaChanges(postgres.url, config);
    if (up.length === 0) {
      console.log('The entities and the migrations agree: nothing to generate.');
      return;
    }
    const timestamp = Date.now();
    const className = `${name}${timestamp}`;
    const body = [
      "import { MigrationInterface, QueryRunner } from 'typeorm';",
      '',
      `export class ${className} implements MigrationInterface {`,
      `  name = '${className}';`,
      '',
      '  async up(queryRunner: QueryRunner): Promise<void> {',
      ...up.map((sql) => `    await queryRunner.query(${quote(sql)});`),
      '  }',
      '',
      '  async down(queryRunner: QueryRunner): Promise<void> {',
      ...down.reverse().map((sql) => `    await queryRunner.query(${quote(sql)});`),
      '  }',
      '}',
      '',
    ];
    const file = path.join(MIGRATIONS_DIR, `${timestamp}-${name}.ts`);
    fs.writeFileSync(file, body.join('\n'));
    writeIndex();
    console.log(`Wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    await postgres.destroy();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
