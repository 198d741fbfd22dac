/**
 * What agents' `toolIds` cost the agents' reads (issue 43): PostgreSQL's execution time of `GET /agents`'s statement
 * and `GET /agents/{id}`'s, as AgentsRepository runs them, against the same statements without the toolIds subquery
 * (the code before), alternated, on a throwaway database holding one account of 50 agents, each with 3 knowledge
 * bases and 3 tools (and 1,000 other accounts alike, so that the indexes are not trivially small).
 *
 *   node -r ./scripts/register.js bench/agents-tool-ids.ts [--runs 400]
 *
 * Execution times come from EXPLAIN (ANALYZE, TIMING OFF): the database's own time for the statement, which the load
 * of a shared machine moves less than a client's round trip. Prints Markdown and writes
 * bench/results/agents-tool-ids-<date>.json.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from 'pg';
import { AgentsRepository } from '../src/agents/agents.repository';
import { loadConfig } from '../src/config/config';
import type { Database } from '../src/database/database';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { median, percentile, round } from './stats';

const ROOT = path.resolve(__dirname, '..');
const runsIndex = process.argv.indexOf('--runs');
const RUNS = runsIndex > 0 ? Number(process.argv[runsIndex + 1]) : 400;
const ACCOUNTS = 1_000;
const AGENTS = 50;
const LINKS = 3;

/** The SQL AgentsRepository sends for a method (its text, as the API runs it), recorded instead of run. */
async function statementOf(run: (repository: AgentsRepository) => Promise<unknown>): Promise<string> {
  let text = '';
  const recorder = { query: (sql: string) => ((text = sql), Promise.resolve([])) } as unknown as Database;
  await run(new AgentsRepository(recorder));
  return text;
}

/** The statement as it was before agents had tools: without the toolIds subquery. */
const withoutToolIds = (sql: string) => {
  const without = sql.replace(/, array\(SELECT l\.tool_id FROM agent_tools l[^)]*\) AS "toolIds"/, '');
  if (without === sql) throw new Error('the toolIds subquery was not found in the statement');
  return without;
};

async function executionMs(client: Client, sql: string, parameters: unknown[]): Promise<number> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ${sql}`, parameters);
  return (rows[0]['QUERY PLAN'] as { 'Execution Time': number }[])[0]['Execution Time'];
}

async function seed(client: Client): Promise<{ accountId: number; agentId: number }> {
  await client.query(`INSERT INTO accounts (name) SELECT 'Bench ' || n FROM generate_series(1, $1) n`, [ACCOUNTS]);
  await client.query(
    `INSERT INTO agents (account_id, name, description, model, voice, language, system_prompt)
    SELECT a.id, 'Agent ' || n, '', 'gpt-4.1', 'shubh', 'hi-IN', '' FROM accounts a, generate_series(1, $1) n`,
    [AGENTS],
  );
  await client.query(`INSERT INTO knowledge_bases (account_id, name) SELECT a.id, 'KB ' || n FROM accounts a, generate_series(1, $1) n`, [
    LINKS,
  ]);
  await client.query(
    `INSERT INTO tools (account_id, type, name, description) SELECT a.id, 'end_call', 'tool_' || n, '' FROM accounts a, generate_series(1, $1) n`,
    [LINKS],
  );
  await client.query(`INSERT INTO agent_knowledge_bases (account_id, agent_id, knowledge_base_id)
    SELECT g.account_id, g.id, kb.id FROM agents g JOIN knowledge_bases kb ON kb.account_id = g.account_id`);
  await client.query(
    `INSERT INTO agent_tools (account_id, agent_id, tool_id) SELECT g.account_id, g.id, t.id FROM agents g JOIN tools t ON t.account_id = g.account_id`,
  );
  await client.query('ANALYZE');
  const { rows } = await client.query<{ accountId: number; agentId: number }>(
    `SELECT account_id AS "accountId", min(id) AS "agentId" FROM agents GROUP BY account_id ORDER BY account_id LIMIT 1`,
  );
  return rows[0];
}

async function main(): Promise<void> {
  const postgres = await startThrowawayPostgres();
  const client = new Client({ connectionString: postgres.url });
  try {
    await runMigrations(postgres.url, loadConfig({}));
    await client.connect();
    const { accountId, agentId } = await seed(client);
    const cases = [
      { name: 'GET /agents (50 agents)', sql: await statementOf((agents) => agents.list(1)), parameters: [accountId] },
      { name: 'GET /agents/{id}', sql: await statementOf((agents) => agents.get(1, 1)), parameters: [accountId, agentId] },
    ];
    const results = [];
    for (const { name, sql, parameters } of cases) {
      const before = withoutToolIds(sql);
      const times = { before: [] as number[], after: [] as number[] };
      // Warm both, then alternate (which goes first too), so that the machine's load falls on both alike.
      for (let run = 0; run < 20; run++) {
        await executionMs(client, before, parameters);
        await executionMs(client, sql, parameters);
      }
      for (let run = 0; run < RUNS; run++) {
        const order: ['before' | 'after', string][] =
          run % 2
            ? [
                ['before', before],
                ['after', sql],
              ]
            : [
                ['after', sql],
                ['before', before],
              ];
        for (const [side, statement] of order) times[side].push(await executionMs(client, statement, parameters));
      }
      const figures = (values: number[]) => ({ p50: round(median(values), 3), p90: round(percentile(values, 0.9), 3) });
      results.push({ name, before: figures(times.before), after: figures(times.after) });
    }
    const result = { date: new Date().toISOString(), runs: RUNS, loadAverage: os.loadavg().map((value) => round(value)), results };
    const file = path.join(ROOT, 'bench', 'results', `agents-tool-ids-${new Date().toISOString().slice(0, 16).replace(':', '')}.json`);
    fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    process.stderr.write(`[bench:agents-tool-ids] wrote ${path.relative(ROOT, file)}\n`);
    const lines = [
      '| Statement | Before toolIds: execution p50 / p90 (ms) | With toolIds: p50 / p90 (ms) |',
      '|---|---|---|',
      ...results.map(({ name, before, after }) => `| ${name} | ${before.p50} / ${before.p90} | ${after.p50} / ${after.p90} |`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await client.end();
    await postgres.destroy();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
