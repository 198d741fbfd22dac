import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { GeneratedSql, generateOnFreshDatabase, QUERIES_DIR, repositoryClasses } from '../scripts/sql-generator';
import { checkTypedRows, describeStatements } from '../scripts/typed-rows';
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

/** One run of the generator for the whole file: the queries files, and every statement described for typed rows. */
let generation: Promise<GeneratedSql> | undefined;
const generated = () => (generation ??= generateOnFreshDatabase(process.env.DATABASE_URL!));

describe('the SQL of the repositories (src/queries)', () => {
  it('is what `npm run sql` generates from the repositories now', async () => {
    const { files } = await generated();
    const checkedIn = new Map(fs.readdirSync(QUERIES_DIR).map((file) => [file, fs.readFileSync(path.join(QUERIES_DIR, file), 'utf8')]));
    expect([...checkedIn.keys()].sort()).toEqual([...files.keys()].sort());
    for (const [file, text] of files) expect({ file, text: checkedIn.get(file) }).toEqual({ file, text });
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

describe('typed rows: the row type of each query<Row>(…) agrees with its SQL (scripts/typed-rows.ts)', () => {
  it('finds no disagreement between a statement and the row type of the call that ran it', async () => {
    const { statements } = await generated();
    expect(statements.length).toBeGreaterThan(50);
    const problems = checkTypedRows(statements);
    expect(problems).toEqual([]);
  }, 60_000);

  describe('on a row type that disagrees with its statement', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'typed-rows-')), 'wrong.repository.ts');
    let client: Client;

    beforeAll(async () => {
      client = new Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
    });
    afterAll(() => client.end());

    /** The problems found with `rowType` for `text`, run from a file of its own (a repository's call, in miniature). */
    async function problemsOf(rowType: string, text: string, rows: Record<string, unknown>[] = []): Promise<string[]> {
      const call = `export const run = () => db.query<${rowType}>(${JSON.stringify(text)});`;
      fs.writeFileSync(file, `declare const db: { query<R>(text: string): Promise<R[]> };\n${call}\n`);
      const site = { file, line: 2, column: call.indexOf('query') + 1 };
      const statements = await describeStatements(client, [{ method: 'WrongRepository.run', text, site, rows }]);
      return checkTypedRows(statements);
    }

    it('reports a missing column, an extra one, a wrong type and a nullable column typed without null', async () => {
      const problems = await problemsOf(
        '{ id: number; revokedAt: Date; count: number; scopes: string[]; missing: string }',
        'SELECT id, revoked_at AS "revokedAt", count(*) OVER () AS count, prefix AS "keyPrefix" FROM api_keys',
      );
      expect(problems.map((problem) => problem.slice(problem.indexOf('>: ') + 3))).toEqual([
        'column "count" (bigint) is read as string, typed number',
        'column "keyPrefix" (character varying, api_keys.prefix) is not in the row type',
        'column "revokedAt" (timestamp with time zone, api_keys.revoked_at) can be NULL (nullable, or outer-joined), typed Date',
        'property "missing" is not a column of the statement',
        'property "scopes" is not a column of the statement',
      ]);
    });

    it('reports a column of a LEFT JOINed table typed without null, and accepts it typed with null', async () => {
      const text = 'SELECT a.id, k.id AS "keyId" FROM accounts a LEFT JOIN api_keys k ON k.account_id = a.id';
      expect(await problemsOf('{ id: number; keyId: number }', text)).toEqual([
        expect.stringContaining('column "keyId" (integer, api_keys.id) can be NULL'),
      ]);
      expect(await problemsOf('{ id: number; keyId: number | null }', text)).toEqual([]);
    });

    it('requires null of a computed column only when an example returned NULL in it', async () => {
      const text = 'SELECT max(name) AS latest FROM accounts';
      expect(await problemsOf('{ latest: string }', text)).toEqual([]);
      expect(await problemsOf('{ latest: string }', text, [{ latest: null }])).toEqual([
        expect.stringContaining('column "latest" (text) can be NULL (seen in an example)'),
      ]);
    });
  });
});
