import * as fs from 'node:fs';
import * as path from 'node:path';
import { generateOnFreshDatabase, QUERIES_DIR, repositoryClasses } from '../scripts/sql-generator';
import { queryMethods } from '../src/database/query.decorator';

/** The checked-in queries files, as blocks: the method's label, whether it is unscoped, its statements. */
function checkedInQueries(): { file: string; label: string; unscoped: boolean; statements: string[] }[] {
  return fs.readdirSync(QUERIES_DIR).flatMap((file) =>
    fs
      .readFileSync(path.join(QUERIES_DIR, file), 'utf8')
      .split(/\n\n(?=-- \w+Repository\.)/)
      .slice(1)
      .map((block) => {
        const lines = block.split('\n');
        const comments = lines.filter((line) => line.startsWith('--'));
        const statements = lines
          .filter((line) => !line.startsWith('--'))
          .join('\n')
          .split(/;\n?/)
          .map((statement) => statement.trim())
          .filter(Boolean);
        return { file, label: comments[0].slice(3), unscoped: comments.some((line) => line.startsWith('-- unscoped:')), statements };
      }),
  );
}

/**
 * A statement of an account-scoped method constrains account_id to `$1`, or inserts `$1` as its account_id. The
 * generator (scripts/sql-generator.ts) fails when such a method binds anything but its account argument as `$1`.
 */
const constrainsAccount = (statement: string) =>
  /\baccount_id\s*=\s*\$1\b/i.test(statement) ||
  /^INSERT\s+INTO\s+\S+\s*\(\s*account_id\b[^)]*\)\s*(VALUES\s*\(\s*\$1\b|SELECT\s+\$1\b)/i.test(statement);

describe('the SQL of the repositories (src/queries)', () => {
  it('is what `npm run sql` generates from the repositories now', async () => {
    const generated = await generateOnFreshDatabase(process.env.DATABASE_URL!);
    const checkedIn = new Map(fs.readdirSync(QUERIES_DIR).map((file) => [file, fs.readFileSync(path.join(QUERIES_DIR, file), 'utf8')]));
    expect([...checkedIn.keys()].sort()).toEqual([...generated.keys()].sort());
    for (const [file, text] of generated) expect({ file, text: checkedIn.get(file) }).toEqual({ file, text });
  }, 60_000);

  it('constrains account_id in every statement of every account-scoped method', () => {
    const queries = checkedInQueries();
    expect(queries.length).toBeGreaterThan(0);
    const unscopedStatements = queries
      .filter((query) => !query.unscoped)
      .flatMap((query) =>
        query.statements
          .filter((statement) => !constrainsAccount(statement))
          .map((statement) => `${query.file} ${query.label}: ${statement}`),
      );
    expect(unscopedStatements).toEqual([]);
  });

  it('marks every method of every repository (so that its SQL is generated and checked)', () => {
    const unmarked = repositoryClasses().flatMap(({ classes }) =>
      classes.flatMap((Repository) => {
        const prototype = Repository.prototype as Record<string, unknown>;
        const marked = new Set(queryMethods(prototype).map(([name]) => name));
        return Object.getOwnPropertyNames(prototype)
          .filter((name) => name !== 'constructor' && typeof prototype[name] === 'function' && !marked.has(name))
          .map((name) => `${Repository.name}.${name}`);
      }),
    );
    expect(unmarked).toEqual([]);
  });

  it('recognises a statement that does not constrain the account', () => {
    expect(constrainsAccount('SELECT id FROM agents WHERE id = $2')).toBe(false);
    expect(constrainsAccount('SELECT id FROM agents WHERE account_id = $1 AND id = $2')).toBe(true);
    expect(constrainsAccount('SELECT id FROM agents WHERE account_id = $2 AND id = $1')).toBe(false);
    expect(constrainsAccount('SELECT id FROM agents WHERE account_id = $10')).toBe(false);
    expect(constrainsAccount('INSERT INTO agents (name, account_id) VALUES ($1, $2)')).toBe(false);
    expect(constrainsAccount('INSERT INTO agents (name) VALUES ($1)')).toBe(false);
    expect(constrainsAccount('INSERT INTO agents (account_id, name) VALUES ($1, $2)')).toBe(true);
  });
});
