/**
 * What a typed query builder would cost each request (issue 31, "typed rows"): the CPU time to build one
 * representative statement, build only (no database), as the repositories build it now (a string) and as
 * Kysely would (its builder, then `compile()`). Kysely is not a dependency of the service; install it outside the
 * checkout and point NODE_PATH at it:
 *
 *   (cd /tmp/kysely && npm i kysely@0.29)
 *   NODE_PATH=/tmp/kysely/node_modules node -r ./scripts/register.js bench/typed-rows.ts
 *
 * Prints one line per case: the median of ROUNDS rounds of µs per build (and the fastest and slowest round).
 */
import 'reflect-metadata';
import { CallFilters, listCallsStatement } from '../src/calls/calls.repository';
import { median, round } from './stats';

/** Kysely, loaded at run time (see above); typed loosely, as its own types are not installed here. */
type Loose = { [key: string]: Loose } & ((...args: unknown[]) => Loose) & (new (...args: unknown[]) => Loose);

const ROUNDS = 15;
const BUILDS_PER_ROUND = 20_000;

/** µs per call of `build`, per round, after a warm-up that lets V8 optimise it. */
function measure(build: () => unknown): number[] {
  let sink: unknown;
  for (let i = 0; i < BUILDS_PER_ROUND; i++) sink = build();
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < BUILDS_PER_ROUND; i++) sink = build();
    rounds.push(Number(process.hrtime.bigint() - start) / 1_000 / BUILDS_PER_ROUND);
  }
  if (sink === undefined) throw new Error('nothing was built');
  return rounds;
}

const FILTERS: CallFilters = { search: 'priya', status: 'qualified', callStatus: 'completed', agentId: 2, days: 7 };
const AGENT_COLUMNS = `id, name, description, model, voice, language, system_prompt AS "systemPrompt", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** The agents list as AgentsRepository.list builds it: a constant, plus the values array. */
const stringAgents = () => [`SELECT ${AGENT_COLUMNS} FROM agents WHERE account_id = $1 ORDER BY id`, [1]];

function kyselyCases(kysely: Loose): Record<string, () => unknown> {
  const { Kysely, DummyDriver, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql } = kysely;
  const db = new Kysely({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (on: unknown) => new PostgresIntrospector(on),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
  const agentColumns = [
    'id',
    'name',
    'description',
    'model',
    'voice',
    'language',
    'system_prompt as systemPrompt',
    'created_at as createdAt',
    'updated_at as updatedAt',
  ];
  const callColumns = [
    'id',
    'name',
    'phone',
    'email',
    'status',
    'call_status as callStatus',
    'sentiment',
    'channel',
    'call_type as callType',
    'website',
    'agent_name as agent',
    'agent_id as agentId',
    'call_date as callDate',
    'duration_seconds as durationSeconds',
    'reply_language as replyLanguage',
    sql`recording_key IS NOT NULL`.as('hasRecording'),
    'feedback',
    'extracted_data as extractedData',
  ];
  const agents = () => db.selectFrom('agents').select(agentColumns).where('account_id', '=', 1).orderBy('id').compile();
  /** The call list's page with every filter, as listCallsStatement writes it. */
  const calls = () => {
    const pattern = `%${FILTERS.search}%`;
    return db
      .selectFrom('calls')
      .select(callColumns)
      .where('account_id', '=', 1)
      .where(sql`NOT is_test`)
      .where((eb: Loose) => eb.or([eb('name', 'ilike', pattern), eb('phone', 'ilike', pattern)]))
      .where(sql`lower(status)`, '=', sql`lower(${FILTERS.status})`)
      .where(sql`lower(call_status)`, '=', sql`lower(${FILTERS.callStatus})`)
      .where('agent_id', '=', FILTERS.agentId)
      .where('call_date', '>=', sql`now() - make_interval(hours => ${FILTERS.days! * 24})`)
      .where('call_date', '<=', sql`now()`)
      .orderBy('call_date', 'desc')
      .orderBy('id', 'desc')
      .limit(200)
      .compile();
  };
  return { 'agents list, Kysely': agents, 'calls list page (every filter), Kysely': calls };
}

function loadKysely(): Loose | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- optional, and not a dependency (see the header)
    return require('kysely') as Loose;
  } catch {
    return undefined;
  }
}

function main(): void {
  const kysely = loadKysely();
  const cases: Record<string, () => unknown> = {
    'agents list, string (now)': stringAgents,
    'calls list page (every filter), string (now)': () => listCallsStatement(1, FILTERS, 200),
    ...(kysely ? kyselyCases(kysely) : {}),
  };
  console.log(`Node ${process.version}; µs per build, median of ${ROUNDS} rounds of ${BUILDS_PER_ROUND} (fastest–slowest round)`);
  for (const [name, build] of Object.entries(cases)) {
    const rounds = measure(build);
    console.log(`${name}: ${round(median(rounds), 3)} µs (${round(Math.min(...rounds), 3)}–${round(Math.max(...rounds), 3)})`);
  }
  if (!kysely) console.log('Kysely not found: see the header for how to install it outside the checkout.');
}

main();
