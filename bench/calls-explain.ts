/**
 * EXPLAIN ANALYZE of every query the calls API runs, on a seeded database, for docs/benchmarks.md:
 *
 *   DATA_DIR=/tmp/calls-bench npm run seed -- --accounts 100 --calls 1000000   # the first account holds 100,000
 *   DATA_DIR=/tmp/calls-bench node -r ./scripts/register.js bench/calls-explain.ts > /tmp/calls-explain.md
 *
 * The list queries are built by listCallsStatement (src/calls/calls.repository.ts) itself, so the SQL is exactly what the API runs,
 * with bind parameters as the API sends them. Prints Markdown; exits with 1 if any plan has a Seq Scan.
 */
import 'reflect-metadata';
import { Client } from 'pg';
import { CallFilters, listCallsStatement } from '../src/calls/calls.repository';
import { loadConfig } from '../src/config/config';
import { openDatabase } from '../src/database/open-database';
import { median } from './stats';

interface Case {
  title: string;
  request: string;
  sql: string;
  parameters: unknown[];
}

const RUNS = 5;

async function explain(client: Client, sql: string, parameters: unknown[]): Promise<{ plan: string; times: number[] }> {
  const times: number[] = [];
  let plan = '';
  for (let run = 0; run < RUNS; run++) {
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, parameters);
    plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    times.push(Number(/Execution Time: ([\d.]+) ms/.exec(plan)![1]));
  }
  return { plan, times };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const database = await openDatabase(config);
  const client = new Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query('ANALYZE calls');
    const { rows: accounts } = await client.query(
      `SELECT account_id AS "accountId", count(*)::int AS calls FROM calls GROUP BY account_id ORDER BY calls DESC, account_id LIMIT 2`,
    );
    const { rows: totals } = await client.query('SELECT count(*)::int AS calls, count(DISTINCT account_id)::int AS accounts FROM calls');
    const { rows: agents } = await client.query('SELECT id FROM agents WHERE account_id = $1 ORDER BY id DESC LIMIT 1', [
      accounts[0].accountId,
    ]);
    const { rows: sample } = await client.query('SELECT id FROM calls WHERE account_id = $1 ORDER BY id LIMIT 1 OFFSET 5000', [
      accounts[0].accountId,
    ]);
    const hot = accounts[0].accountId as number;
    const small = accounts[1].accountId as number;
    const listCase = (title: string, accountId: number, filters: CallFilters & { limit?: number }): Case => {
      const { limit = 200, ...rest } = filters;
      const [sql, parameters] = listCallsStatement(accountId, rest, limit);
      const parts = Object.entries(filters).map(([key, value]) => `${key}=${String(value)}`);
      return { title, request: `GET /calls${parts.length ? `?${parts.join('&')}` : ''}`, sql, parameters };
    };
    const cases: Case[] = [
      listCase('List, default limit (200)', hot, {}),
      listCase('List, limit 1000', hot, { limit: 1000 }),
      listCase('List, small account', small, {}),
      listCase('Last 7 days', hot, { days: 7 }),
      listCase('Last 365 days', hot, { days: 365 }),
      listCase('Status (common)', hot, { status: 'qualified' }),
      listCase('callStatus (rare, 3%)', hot, { callStatus: 'voicemail' }),
      listCase('agentId', hot, { agentId: agents[0].id }),
      listCase('Search a common surname (Latin)', hot, { search: 'sharma' }),
      listCase('Search a Devanagari name', hot, { search: 'प्रिया' }),
      listCase('Search a rare name (CJK)', hot, { search: '张伟' }),
      listCase('Search a less common surname', hot, { search: 'kulkarni' }),
      listCase('Search, no match', hot, { search: 'zzqx' }),
      listCase('Search phone digits with punctuation', hot, { search: '98765 43' }),
      listCase('Search phone digits', hot, { search: '9876543' }),
      listCase('Search a phone prefix as written', hot, { search: '+44 20' }),
      listCase('Search 1 character', hot, { search: 'a' }),
      listCase('Search 2 characters, common', hot, { search: 'ya' }),
      listCase('Search 2 characters, no match', hot, { search: 'qz' }),
      listCase('Search + status + days', hot, { search: 'sharma', status: 'qualified', days: 90 }),
      listCase('Search, small account', small, { search: 'sharma' }),
      {
        title: 'One call by id',
        request: 'GET /calls/{callId}',
        sql: 'SELECT * FROM calls WHERE account_id = $1 AND id = $2 LIMIT 1',
        parameters: [hot, sample[0].id],
      },
    ];

    const out: string[] = [];
    const seqScans: string[] = [];
    const { rows: version } = await client.query('SHOW server_version');
    out.push(
      `Data: ${totals[0].calls.toLocaleString('en')} calls in ${totals[0].accounts} accounts; hot account ${hot} holds ${Number(accounts[0].calls).toLocaleString('en')}, ` +
        `small account ${small} holds ${Number(accounts[1].calls).toLocaleString('en')}. PostgreSQL ${version[0].server_version}, ` +
        `median of ${RUNS} runs (warm cache), 2 shared vCPUs.`,
      '',
      '| Request | Account | Rows | Median | Plan (top nodes) |',
      '|---|---|---|---|---|',
    );
    const details: string[] = [];
    for (const testCase of cases) {
      const { plan, times } = await explain(client, testCase.sql, testCase.parameters);
      if (/Seq Scan/.test(plan)) seqScans.push(testCase.title);
      const rows = Number(/rows=([\d.]+)/.exec(plan)?.[1] ?? NaN);
      const nodes = plan
        .split('\n')
        .filter((line) => /(Scan|Sort|Limit|BitmapOr|BitmapAnd)/.test(line) && !/Sort Key|Sort Method|Buffers|Heap Blocks/.test(line))
        .map((line) =>
          line
            .replace(/^[\s->]+/, '')
            .replace(/\s*\(actual.*$/, '')
            .replace(/ on calls call$| on calls$/, ''),
        )
        .slice(0, 5)
        .join(' → ');
      const account = testCase.parameters.includes(hot) ? 'hot' : 'small';
      out.push(
        `| ${testCase.title}: \`${testCase.request}\` | ${account} | ${rows} | ${median(times).toFixed(2)} ms | ${nodes.replace(/\|/g, '\\|')} |`,
      );
      details.push(`#### ${testCase.title}: \`${testCase.request}\``, '', '```', plan, '```', '');
    }
    out.push(
      '',
      `Sequential scans: ${seqScans.length ? seqScans.join(', ') : 'none'}.`,
      '',
      '<details><summary>Full plans</summary>',
      '',
      ...details,
      '</details>',
    );
    process.stdout.write(`${out.join('\n')}\n`);
    if (seqScans.length) process.exitCode = 1;
  } finally {
    await client.end();
    await database.stop();
  }
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
