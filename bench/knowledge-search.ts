/**
 * `npm run bench:knowledge`: retrieval over 10,000 passages in one account, beside two other accounts of
 * 10,000 passages each, in the six scripts of the seed data (bench/knowledge-text.ts). Sources go through the
 * service's own pipeline (passages.ts, search-tokens.ts, KnowledgeBasesRepository.insertPassages, the
 * statistics triggers); questions go through KnowledgeService.retrieve, whose statements are timed at the
 * client (database time, loopback round trips included). EXPLAIN (ANALYZE) of the search statement for every
 * script: no sequential scan anywhere in the plan.
 *
 * Writes bench/results/knowledge-search-<date>.json. Options: --passages N (per account, default 10000),
 * --questions N (per script, default 300), --seed S.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Pool } from 'pg';
import { loadConfig } from '../src/config/config';
import { Database, Sql } from '../src/database/database';
import { runMigrations } from '../src/database/migrate';
import { startThrowawayPostgres } from '../scripts/throwaway-postgres';
import { KnowledgeBasesRepository } from '../src/knowledge-bases/knowledge-bases.repository';
import { KnowledgeService, MATCH_BUDGET, searchPlan } from '../src/knowledge-bases/knowledge.service';
import { splitIntoPassages } from '../src/knowledge-bases/passages';
import { distinctSearchTokens } from '../src/knowledge-bases/search-tokens';
import { SCRIPTS, textGenerator } from './knowledge-text';
import { percentileOfSorted, round } from './stats';

const flag = (name: string, fallback: number) => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const PASSAGES_PER_ACCOUNT = flag('passages', 10_000);
const QUESTIONS_PER_SCRIPT = flag('questions', 300);
const SEED = flag('seed', 20261123);
const ACCOUNTS = 3;
const KNOWLEDGE_BASES_PER_ACCOUNT = 5;
const TARGET_P99_MS = 20;

/** The Database the repository expects, on a plain pool, timing every statement. */
class TimedDatabase implements Sql {
  timings: number[] = [];
  constructor(private readonly pool: Pool) {}
  async query<R>(text: string, values: readonly unknown[] = []): Promise<R[]> {
    const started = process.hrtime.bigint();
    const { rows } = await this.pool.query(text, values as unknown[]);
    this.timings.push(Number(process.hrtime.bigint() - started) / 1e6);
    return rows as R[];
  }
  async transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work({
        query: async <R>(text: string, values: readonly unknown[] = []) => (await client.query(text, values as unknown[])).rows as R[],
      });
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }
}

async function seedAccount(pool: Pool, repository: KnowledgeBasesRepository, text: ReturnType<typeof textGenerator>, index: number) {
  const [{ id: accountId }] = (await pool.query(`INSERT INTO accounts (name) VALUES ($1) RETURNING id`, [`Knowledge bench ${index}`])).rows;
  const knowledgeBaseIds: number[] = [];
  for (let kb = 0; kb < KNOWLEDGE_BASES_PER_ACCOUNT; kb++)
    knowledgeBaseIds.push((await repository.insertKnowledgeBase(accountId, `Handbook ${kb + 1}`)).id);
  let passages = 0;
  let sources = 0;
  while (passages < PASSAGES_PER_ACCOUNT) {
    const script = SCRIPTS[sources % SCRIPTS.length];
    // A source of 5–40 passages' worth of text in one script.
    const content = Array.from({ length: text.int(5, 40) }, () => text.passage(script)).join('\n\n');
    const split = splitIntoPassages(content).slice(0, PASSAGES_PER_ACCOUNT - passages);
    const knowledgeBaseId = knowledgeBaseIds[sources % knowledgeBaseIds.length];
    const source = await repository.insertSource(accountId, knowledgeBaseId, {
      name: `${script} guide ${sources + 1}`,
      type: 'text',
      content,
      status: 'ready',
    });
    await repository.insertPassages(
      accountId,
      knowledgeBaseId,
      source.id,
      split.map((passage) => ({ text: passage, tokens: distinctSearchTokens(passage) })),
    );
    passages += split.length;
    sources++;
  }
  return { accountId, knowledgeBaseIds, passages, sources };
}

/** A node of EXPLAIN (FORMAT JSON)'s plan, as far as it is read here. */
interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function planNodes(plan: PlanNode): string[] {
  const children = plan.Plans ?? [];
  const own = `${plan['Node Type']}${plan['Index Name'] ? ` on ${plan['Index Name']}` : plan['Relation Name'] ? ` on ${plan['Relation Name']}` : ''}`;
  return [own, ...children.flatMap(planNodes)];
}

async function main(): Promise<void> {
  // DATABASE_URL: an existing server (a fresh database on it is best); otherwise a throwaway embedded one.
  const postgres = process.env.DATABASE_URL ? undefined : await startThrowawayPostgres();
  const url = process.env.DATABASE_URL ?? postgres!.url;
  const pool = new Pool({ connectionString: url, max: 4 });
  try {
    await runMigrations(url, loadConfig({}));
    const database = new TimedDatabase(pool);
    const repository = new KnowledgeBasesRepository(database as unknown as Database);
    const knowledge = new KnowledgeService(repository);
    const text = textGenerator(SEED);

    const seedStarted = Date.now();
    const accounts = [];
    for (let index = 0; index < ACCOUNTS; index++) {
      accounts.push(await seedAccount(pool, repository, text, index));
      process.stderr.write(
        `account ${index + 1}/${ACCOUNTS}: ${accounts[index].passages} passages in ${accounts[index].sources} sources\n`,
      );
    }
    await pool.query('VACUUM ANALYZE');
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    const hot = accounts[0];
    const [{ total }] = (await pool.query(`SELECT count(*)::int AS total FROM knowledge_passages`)).rows;

    const results: Record<string, unknown>[] = [];
    for (const script of SCRIPTS) {
      const questions = Array.from({ length: QUESTIONS_PER_SCRIPT }, () => text.question(script));
      // Warm-up: the first questions of the script, not measured.
      for (const question of questions.slice(0, 30)) await knowledge.retrieve(hot.accountId, hot.knowledgeBaseIds, question, 5);
      const times: number[] = [];
      let answered = 0;
      const agreement = { top1: 0, overlap5: 0, compared: 0 };
      for (const question of questions) {
        database.timings = [];
        const found = await knowledge.retrieve(hot.accountId, hot.knowledgeBaseIds, question, 5);
        times.push(database.timings.reduce((sum, time) => sum + time, 0));
        if (found.length) answered++;
        const reference = await exhaustive(repository, hot, question);
        if (reference.length) {
          agreement.compared++;
          agreement.top1 += found[0]?.text === reference[0].text ? 1 : 0;
          agreement.overlap5 += found.filter(({ text }) => reference.some((passage) => passage.text === text)).length / reference.length;
        }
      }
      times.sort((a, b) => a - b);
      const explained = await explainScript(pool, repository, hot, questions.slice(0, 20));
      results.push({
        script,
        questions: questions.length,
        answered,
        // The same question ranked exhaustively (every token looked up, every match a candidate): how often the
        // bounded search gives the same best passage, and how much of the same top 5.
        agreementWithExhaustive: {
          top1: round(agreement.top1 / agreement.compared),
          overlap5: round(agreement.overlap5 / agreement.compared),
        },
        databaseMs: {
          p50: round(percentileOfSorted(times, 0.5)),
          p95: round(percentileOfSorted(times, 0.95)),
          p99: round(percentileOfSorted(times, 0.99)),
          max: round(times[times.length - 1]),
        },
        sequentialScans: explained.sequentialScans,
        examplePlan: explained.example,
        exampleQuestion: questions[0],
      });
      const last = results[results.length - 1] as { databaseMs: Record<string, number> };
      process.stderr.write(
        `${script.padEnd(11)} p50 ${last.databaseMs.p50} ms  p99 ${last.databaseMs.p99} ms  max ${last.databaseMs.max} ms  seq scans ${explained.sequentialScans}  top-1 as exhaustive ${round(agreement.top1 / agreement.compared)}\n`,
      );
    }

    const document = {
      date: new Date().toISOString(),
      node: process.version,
      // The machine is shared: its load average during the run says how much the times are inflated.
      loadAverage: os.loadavg().map(round),
      shape: {
        accounts: ACCOUNTS,
        passagesPerAccount: PASSAGES_PER_ACCOUNT,
        totalPassages: total,
        hotAccountSources: hot.sources,
        knowledgeBasesPerAccount: KNOWLEDGE_BASES_PER_ACCOUNT,
        seed: SEED,
      },
      seedSeconds,
      targetP99Ms: TARGET_P99_MS,
      met: results.every((result) => (result.databaseMs as { p99: number }).p99 < TARGET_P99_MS && result.sequentialScans === 0),
      results,
    };
    const file = path.join(
      __dirname,
      'results',
      `knowledge-search-${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}.json`,
    );
    fs.writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
    process.stderr.write(`${document.met ? 'Every target met' : 'A target was missed'}; wrote ${path.relative(process.cwd(), file)}\n`);
  } finally {
    await pool.end();
    await postgres?.destroy();
  }
}

/** The top 5 of a question with no bound: every token looked up, every one of its passages a candidate. */
async function exhaustive(repository: KnowledgeBasesRepository, hot: { accountId: number; knowledgeBaseIds: number[] }, question: string) {
  const tokens = distinctSearchTokens(question);
  const statistics = await repository.corpusStatistics(hot.accountId, tokens);
  const plan = statistics && searchPlan(tokens, statistics.documentFrequencies, statistics.passages, Number.MAX_SAFE_INTEGER);
  if (!statistics || !plan?.terms.length) return [];
  return repository.searchPassages(hot.accountId, hot.knowledgeBaseIds, plan, statistics.tokens / statistics.passages, 5, 1_000_000);
}

/** EXPLAIN ANALYZE of the search statement for these questions: sequential scans counted, one plan kept. */
async function explainScript(
  pool: Pool,
  repository: KnowledgeBasesRepository,
  hot: { accountId: number; knowledgeBaseIds: number[] },
  questions: string[],
) {
  let sequentialScans = 0;
  let example: unknown;
  const capture = new (class implements Sql {
    statement: { text: string; values: readonly unknown[] } | undefined;
    async query<R>(text: string, values: readonly unknown[] = []): Promise<R[]> {
      this.statement = { text, values };
      return (await pool.query(text, values as unknown[])).rows as R[];
    }
  })();
  const capturing = new KnowledgeBasesRepository(capture as unknown as Database);
  for (const question of questions) {
    const tokens = distinctSearchTokens(question);
    const statistics = await repository.corpusStatistics(hot.accountId, tokens);
    const plan = statistics && searchPlan(tokens, statistics.documentFrequencies, statistics.passages);
    if (!statistics || !plan || plan.terms.length === 0) continue;
    await capturing.searchPassages(hot.accountId, hot.knowledgeBaseIds, plan, statistics.tokens / statistics.passages, 5, MATCH_BUDGET);
    const { text, values } = capture.statement!;
    const [
      {
        'QUERY PLAN': [explained],
      },
    ] = (await pool.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, values as unknown[])).rows;
    const nodes = planNodes(explained.Plan);
    sequentialScans += nodes.filter((node) => node.startsWith('Seq Scan')).length;
    example ??= { question, terms: plan.terms.length, lookedUp: plan.lookUp, executionMs: explained['Execution Time'], nodes };
  }
  return { sequentialScans, example };
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
