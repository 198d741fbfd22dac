/**
 * `npm run sql`: rewrites src/queries/*.sql, the SQL of every repository method (see sql-generator.ts), on a
 * fresh database on the server in DATABASE_URL, or on a throwaway embedded PostgreSQL.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startThrowawayPostgres } from './throwaway-postgres';
import { generateOnFreshDatabase, QUERIES_DIR } from './sql-generator';
import { checkTypedRows } from './typed-rows';

async function main(): Promise<void> {
  const throwaway = process.env.DATABASE_URL ? undefined : await startThrowawayPostgres();
  try {
    const { files, statements } = await generateOnFreshDatabase(process.env.DATABASE_URL ?? throwaway!.url);
    fs.mkdirSync(QUERIES_DIR, { recursive: true });
    for (const stale of fs.readdirSync(QUERIES_DIR).filter((file) => !files.has(file))) fs.rmSync(path.join(QUERIES_DIR, stale));
    for (const [file, text] of files) fs.writeFileSync(path.join(QUERIES_DIR, file), text);
    console.log(`Wrote ${files.size} files to ${path.relative(process.cwd(), QUERIES_DIR)}`);
    // The same check as test/sql.spec.ts, so that a row type that disagrees with its SQL shows at once.
    for (const problem of checkTypedRows(statements)) console.warn(`typed rows: ${problem}`);
  } finally {
    await throwaway?.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
