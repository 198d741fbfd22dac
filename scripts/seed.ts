/**
 * Demo data: `npm run seed -- --accounts 3 --calls 10000`
 *
 * Creates accounts (printing their API keys), a few agents each, and realistic calls: Indian and
 * international caller names in several scripts, phone numbers in several formats, statuses, sentiments,
 * channels, transcripts of 4–30 turns, dates spread over the last two years, and a few test calls.
 * The first account is the "hot" one: it gets `--hot-share` of the calls (default 10%, or an equal share
 * when there are fewer than 10 accounts), the others share the rest evenly.
 *
 * Uses the same database as the server and the CLI (DATABASE_URL, or the embedded PostgreSQL under
 * DATA_DIR) and runs the migrations first. Calls go in with multi-row `INSERT … SELECT FROM unnest(…)`
 * batches over two connections, so a million calls take a few minutes. Options:
 *   --accounts N     accounts to create (default 3)
 *   --calls M        calls in total (default 10000)
 *   --hot-share F    share of the calls for the first account, 0–1 (default max(0.1, 1/N))
 *   --random-seed S  makes the data reproducible (default: random)
 * A progress bar goes to stderr; the last line of stdout is JSON: the accounts with their API keys.
 */
import 'reflect-metadata';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { Agent } from '../src/agents/agent.entity';
import { REPLY_LANGUAGES } from '../src/agents/voices';
import { standaloneAuthServices } from '../src/auth/accounts.service';
import { Database } from '../src/database/database';
import { parseStrictOptions, UsageError } from '../src/cli/cli';
import { loadConfig } from '../src/config/config';
import { dataSourceOptions } from '../src/database/data-source-options';
import { runMigrations } from '../src/database/migrate';
import { openDatabase } from '../src/database/open-database';

// ---------------------------------------------------------------- options

interface SeedOptions {
  accounts: number;
  calls: number;
  hotShare: number;
  randomSeed: number;
}

function numberFlag(
  flags: Record<string, string | true>,
  name: string,
  fallback: number,
  min: number,
  max: number,
  integer = true,
): number {
  const raw = flags[name];
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (raw === true || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer' : 'a number'} between ${min} and ${max}`);
  }
  return value;
}

const SEED_OPTIONS = {
  accounts: { type: 'string' },
  calls: { type: 'string' },
  'hot-share': { type: 'string' },
  'random-seed': { type: 'string' },
} as const;

function readOptions(argv: string[]): SeedOptions {
  const flags = parseStrictOptions(argv, SEED_OPTIONS, 'seed');
  const accounts = numberFlag(flags, 'accounts', 3, 1, 10_000);
  return {
    accounts,
    calls: numberFlag(flags, 'calls', 10_000, 0, 100_000_000),
    hotShare: numberFlag(flags, 'hot-share', Math.max(0.1, 1 / accounts), 0, 1, false),
    randomSeed: numberFlag(flags, 'random-seed', Math.floor(Math.random() * 2 ** 31), 0, 2 ** 31),
  };
}

/** Calls per account: the first gets the hot share (everything when alone), the others split the rest. */
export function callsPerAccount(accounts: number, calls: number, hotShare: number): number[] {
  if (accounts === 1) return [calls];
  const hot = Math.round(calls * hotShare);
  const rest = calls - hot;
  const others = Array.from({ length: accounts - 1 }, (_, i) => Math.floor(rest / (accounts - 1)) + (i < rest % (accounts - 1) ? 1 : 0));
  return [hot, ...others];
}

// ---------------------------------------------------------------- random data

/** mulberry32: small, fast, seedable. */
export function randomGenerator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  /** Picks by weight: [[value, weight], …]. */
  const weighted = <T>(items: readonly (readonly [T, number])[]): T => {
    const total = items.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = next() * total;
    for (const [value, weight] of items) if ((roll -= weight) < 0) return value;
    return items[items.length - 1][0];
  };
  const digits = (count: number) => Array.from({ length: count }, () => int(0, 9)).join('');
  return { next, int, pick, weighted, digits };
}
type Random = ReturnType<typeof randomGenerator>;

/** First and last names by script; a caller's name stays within one script. */
export const NAMES: { script: string; first: string[]; last: string[]; ascii: boolean }[] = [
  {
    script: 'latin-indian',
    ascii: true,
    first: [
      'Priya',
      'Rahul',
      'Ananya',
      'Arjun',
      'Kavya',
      'Vikram',
      'Sneha',
      'Rohan',
      'Aditi',
      'Karthik',
      'Meera',
      'Suresh',
      'Lakshmi',
      'Imran',
      'Fatima',
      'Harpreet',
      'Gurpreet',
      'Deepika',
      'Sanjay',
      'Pooja',
    ],
    last: [
      'Sharma',
      'Verma',
      'Iyer',
      'Nair',
      'Reddy',
      'Patel',
      'Gupta',
      'Das',
      'Singh',
      'Khan',
      'Menon',
      'Mukherjee',
      'Joshi',
      'Kulkarni',
      'Rao',
      'Chatterjee',
      'Pillai',
      'Desai',
    ],
  },
  {
    script: 'devanagari',
    ascii: false,
    first: ['प्रिया', 'राहुल', 'अनन्या', 'अर्जुन', 'काव्या', 'विक्रम', 'स्नेहा', 'रोहन', 'अदिति', 'सुरेश', 'पूजा', 'संजय'],
    last: ['शर्मा', 'वर्मा', 'गुप्ता', 'सिंह', 'जोशी', 'पटेल', 'मिश्रा', 'यादव', 'कुलकर्णी'],
  },
  {
    script: 'bengali',
    ascii: false,
    first: ['অর্জুন', 'সৌরভ', 'মৌমিতা', 'রিয়া', 'অনির্বাণ', 'তানিয়া', 'সুমন', 'দেবাশীষ'],
    last: ['দাস', 'বসু', 'মুখার্জী', 'চ্যাটার্জী', 'সেন', 'ঘোষ', 'রায়'],
  },
  {
    script: 'tamil',
    ascii: false,
    first: ['கார்த்திக்', 'பிரியா', 'அருண்', 'லட்சுமி', 'செந்தில்', 'மீனா', 'விஜய்', 'தீபா'],
    last: ['ராஜா', 'சுப்பிரமணியம்', 'கிருஷ்ணன்', 'முருகன்', 'வேலு', 'சுந்தரம்'],
  },
  {
    script: 'international',
    ascii: true,
    first: [
      'John',
      'Emma',
      'Olivia',
      'Liam',
      'María',
      'José',
      'Sophie',
      'Lukas',
      'Chloé',
      'Ahmed',
      'Yuki',
      'Wei',
      'Fatou',
      'Noah',
      'Zoë',
      'Björn',
    ],
    last: ['Smith', 'García', 'Müller', 'Dubois', 'Rossi', 'Tanaka', 'Kim', 'Okafor', 'Nguyen', "O'Brien", 'Johnson', 'Silva', 'Andersson'],
  },
  { script: 'cjk', ascii: false, first: ['伟', '芳', '娜', '秀英', '敏'], last: ['张', '王', '李', '刘', '陈'] },
  { script: 'arabic', ascii: false, first: ['أحمد', 'فاطمة', 'محمد', 'ليلى'], last: ['خان', 'حسن', 'علي'] },
];

const SCRIPT_WEIGHTS = [
  ['latin-indian', 45],
  ['devanagari', 20],
  ['bengali', 7],
  ['tamil', 7],
  ['international', 15],
  ['cjk', 3],
  ['arabic', 3],
] as const;

function callerName(random: Random): { name: string; emailLocal: string | null } {
  if (random.next() < 0.04) return { name: '', emailLocal: null };
  const scriptName = random.weighted(SCRIPT_WEIGHTS);
  const script = NAMES.find((entry) => entry.script === scriptName)!;
  const first = random.pick(script.first);
  const last = random.pick(script.last);
  const name = script.script === 'cjk' ? `${last}${first}` : `${first} ${last}`;
  const emailLocal = script.ascii
    ? `${first}.${last}`
        .normalize('NFD')
        .replace(/[^A-Za-z.]/g, '')
        .toLowerCase()
    : null;
  return { name, emailLocal };
}

function phoneNumber(random: Random): string {
  const mobile = `${random.pick(['6', '7', '8', '9'])}${random.digits(9)}`;
  return random.weighted([
    [`+91-${mobile.slice(0, 5)}-${mobile.slice(5)}`, 25],
    [`+91 ${mobile.slice(0, 5)} ${mobile.slice(5)}`, 25],
    [mobile, 12],
    [`0${mobile.slice(0, 5)} ${mobile.slice(5)}`, 8],
    [`+91${mobile}`, 8],
    [`(0${random.int(11, 99)}) ${random.digits(4)}-${random.digits(4)}`, 4],
    [`+1 (${random.int(201, 989)}) ${random.digits(3)}-${random.digits(4)}`, 6],
    [`+44 20 ${random.digits(4)} ${random.digits(4)}`, 4],
    [`+971 5${random.digits(1)} ${random.digits(3)} ${random.digits(4)}`, 3],
    ['', 5],
  ]);
}

const EMAIL_DOMAINS = ['gmail.com', 'yahoo.co.in', 'outlook.com', 'rediffmail.com', 'example.com', 'hotmail.com'];
const STATUSES = [
  ['new', 25],
  ['qualified', 20],
  ['interested', 18],
  ['not-interested', 15],
  ['callback', 14],
  ['converted', 8],
] as const;
const CALL_STATUSES = [
  ['completed', 78],
  ['missed', 8],
  ['no-answer', 5],
  ['busy', 3],
  ['failed', 3],
  ['voicemail', 3],
] as const;
const SENTIMENTS = [
  ['positive', 45],
  ['neutral', 38],
  ['negative', 17],
] as const;
const CHANNELS = [
  ['phone', 60],
  ['web-widget', 30],
  ['whatsapp', 10],
] as const;
const WEBSITES = [
  'https://shop.example.in/contact',
  'https://www.example-realty.in/',
  'https://clinic.example.com/book',
  'https://example.co.uk/support',
];
const CITIES = [
  'Mumbai',
  'Delhi',
  'Bengaluru',
  'Chennai',
  'Kolkata',
  'Pune',
  'Hyderabad',
  'Ahmedabad',
  'Jaipur',
  'Kochi',
  'London',
  'Dubai',
];
const INTENTS = ['book-appointment', 'pricing', 'order-status', 'support', 'site-visit', 'refund', 'general-enquiry'];

const AGENT_LINES = [
  'Namaste! How can I help you today?',
  'नमस्ते! मैं आपकी कैसे मदद कर सकती हूँ?',
  'Could you tell me your name, please?',
  'Which city are you calling from?',
  'Let me check that for you.',
  'We have a slot tomorrow at 11 am. Shall I book it?',
  'आपका बजट कितना है?',
  'I have noted your details. Our team will call you back.',
  'Is there anything else I can help you with?',
  'Thank you for calling. Have a great day!',
];
const USER_LINES = [
  'Hi, I wanted to know the price.',
  'मुझे 2BHK फ्लैट चाहिए।',
  'My order has not arrived yet.',
  'Can I book an appointment for tomorrow?',
  'আমি কলকাতা থেকে বলছি।',
  'எனக்கு ஒரு சந்திப்பு வேண்டும்.',
  'Yes, please go ahead.',
  'No, that is all. Thanks!',
  'Budget is around 50 lakh.',
  'Can you call me back in the evening?',
];

function transcript(random: Random, turns: number): string {
  const entries = Array.from({ length: turns }, (_, i) =>
    i % 2 === 0 ? { speaker: 'agent', text: random.pick(AGENT_LINES) } : { speaker: 'user', text: random.pick(USER_LINES) },
  );
  return JSON.stringify(entries);
}

interface SeedAgent {
  id: number;
  name: string;
  language: string;
}

const TWO_YEARS_MS = 2 * 365 * 24 * 3600 * 1000;
const CALL_COLUMNS = [
  ['account_id', 'int'],
  ['agent_id', 'int'],
  ['agent_name', 'varchar'],
  ['name', 'varchar'],
  ['phone', 'varchar'],
  ['email', 'varchar'],
  ['status', 'varchar'],
  ['call_status', 'varchar'],
  ['sentiment', 'varchar'],
  ['channel', 'varchar'],
  ['call_type', 'varchar'],
  ['website', 'varchar'],
  ['reply_language', 'varchar'],
  ['call_date', 'timestamptz'],
  ['duration_seconds', 'float8'],
  ['feedback', 'jsonb'],
  ['extracted_data', 'jsonb'],
  ['transcript', 'jsonb'],
  ['is_test', 'bool'],
] as const;

/** One row, in CALL_COLUMNS order. */
function callRow(random: Random, accountId: number, agents: SeedAgent[], now: number): unknown[] {
  const agent = random.pick(agents);
  const { name, emailLocal } = callerName(random);
  const callStatus = random.weighted(CALL_STATUSES);
  const answered = callStatus === 'completed';
  const channel = random.weighted(CHANNELS);
  const callType =
    channel === 'web-widget'
      ? 'web'
      : random.weighted([
          ['inbound', 70],
          ['outbound', 30],
        ] as const);
  // Skewed towards recent calls, spread over two years.
  const callDate = new Date(now - Math.floor(random.next() ** 1.6 * TWO_YEARS_MS));
  const duration = answered ? Math.round(Math.min(3600, 15 + -Math.log(1 - random.next()) * 150) * 10) / 10 : random.int(0, 20);
  const feedback =
    answered && random.next() < 0.2
      ? JSON.stringify({ rating: random.int(1, 5), comment: random.pick(['Very helpful', 'बहुत अच्छा', 'Too slow', 'Solved my problem']) })
      : null;
  const extracted: Record<string, unknown> = { intent: random.pick(INTENTS), city: random.pick(CITIES) };
  if (random.next() < 0.3) extracted.budget = `${random.int(10, 200)} lakh`;
  return [
    accountId,
    agent.id,
    agent.name,
    name,
    phoneNumber(random),
    emailLocal && random.next() < 0.5 ? `${emailLocal}${random.int(1, 99)}@${random.pick(EMAIL_DOMAINS)}` : '',
    random.weighted(STATUSES),
    callStatus,
    answered ? random.weighted(SENTIMENTS) : 'neutral',
    channel,
    callType,
    channel === 'web-widget' ? random.pick(WEBSITES) : '',
    random.next() < 0.8 ? agent.language : random.pick(REPLY_LANGUAGES),
    callDate.toISOString(),
    duration,
    feedback,
    JSON.stringify(answered ? extracted : {}),
    transcript(random, answered ? random.int(4, 30) : 0),
    random.next() < 0.005,
  ];
}

const INSERT_CALLS_SQL = `INSERT INTO calls (${CALL_COLUMNS.map(([column]) => column).join(', ')})
  SELECT * FROM unnest(${CALL_COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`;

/** Rows → one array per column, for unnest. */
function toColumns(rows: unknown[][]): unknown[][] {
  return CALL_COLUMNS.map((_, column) => rows.map((row) => row[column]));
}

// ---------------------------------------------------------------- progress

function progressBar(total: number) {
  const started = Date.now();
  const interactive = process.stderr.isTTY;
  let lastPrinted = -1;
  return (done: number) => {
    const fraction = total === 0 ? 1 : done / total;
    const percent = Math.floor(fraction * 100);
    if (!interactive && percent < lastPrinted + 10 && done !== total) return;
    lastPrinted = percent;
    const seconds = (Date.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    const width = 30;
    const bar = '#'.repeat(Math.round(fraction * width)).padEnd(width, '.');
    const line = `[${bar}] ${String(percent).padStart(3)}%  ${done.toLocaleString('en')}/${total.toLocaleString('en')} calls  ${rate.toLocaleString('en')}/s  ${seconds.toFixed(0)}s`;
    process.stderr.write(interactive ? `\r${line}${done === total ? '\n' : ''}` : `${line}\n`);
  };
}

// ---------------------------------------------------------------- seeding

const AGENT_TEMPLATES = [
  { name: 'Reception desk', language: 'hi-IN', voice: 'shubh' },
  { name: 'Sales (English)', language: 'en-IN', voice: 'anushka' },
  { name: 'Support (Bengali)', language: 'bn-IN', voice: 'manisha' },
  { name: 'Appointments (Tamil)', language: 'ta-IN', voice: 'vidya' },
  { name: 'After-hours', language: 'en-US', voice: 'arya' },
];

async function createAgents(dataSource: DataSource, accountId: number, random: Random): Promise<SeedAgent[]> {
  const templates = AGENT_TEMPLATES.slice(0, random.int(3, AGENT_TEMPLATES.length));
  const agents = await dataSource.getRepository(Agent).save(
    templates.map((template) => ({
      ...template,
      accountId,
      description: `Demo agent: ${template.name}`,
      model: 'gpt-4.1',
      systemPrompt: '',
    })),
  );
  return agents.map(({ id, name, language }) => ({ id, name, language }));
}

const BATCH_SIZE = 2_000;
const CONNECTIONS = 2;

async function insertCalls(url: string, plan: { accountId: number; agents: SeedAgent[]; calls: number }[], random: Random): Promise<void> {
  const total = plan.reduce((sum, entry) => sum + entry.calls, 0);
  const clients = await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      const client = new Client({ connectionString: url, application_name: 'voice-agent-seed' });
      await client.connect();
      await client.query('SET synchronous_commit = off');
      return client;
    }),
  );
  const progress = progressBar(total);
  const now = Date.now();
  const pending: Promise<void>[] = [];
  let done = 0;
  let turn = 0;
  try {
    progress(0);
    for (const { accountId, agents, calls } of plan) {
      for (let offset = 0; offset < calls; offset += BATCH_SIZE) {
        const rows = Array.from({ length: Math.min(BATCH_SIZE, calls - offset) }, () => callRow(random, accountId, agents, now));
        // Round robin: wait for this connection's previous batch, then send; the next batch is generated meanwhile.
        const slot = turn++ % CONNECTIONS;
        await pending[slot];
        pending[slot] = clients[slot].query(INSERT_CALLS_SQL, toColumns(rows)).then(() => {
          done += rows.length;
          progress(done);
        });
        pending[slot].catch(() => undefined); // rejections surface at the next await of this slot
      }
    }
    await Promise.all(pending);
    await clients[0].query('ANALYZE calls'); // fresh statistics, so the first queries get good plans
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  const random = randomGenerator(options.randomSeed);
  const config = loadConfig();
  const database = await openDatabase(config);
  try {
    process.stderr.write(`Database: ${database.description}\n`);
    await runMigrations(database.url, config);
    const dataSource = await new DataSource({ ...dataSourceOptions(database.url, config), poolSize: 1 }).initialize();
    const { accounts } = standaloneAuthServices(Database.of(dataSource));
    const counts = callsPerAccount(options.accounts, options.calls, options.hotShare);
    const created: { accountId: number; name: string; apiKey: string; agents: number; calls: number }[] = [];
    const plan: { accountId: number; agents: SeedAgent[]; calls: number }[] = [];
    try {
      for (const [index, calls] of counts.entries()) {
        const name = `Demo account ${index + 1}${index === 0 && calls > (counts[1] ?? calls) ? ' (hot)' : ''}`;
        const { account, key } = await accounts.create(name);
        const agents = await createAgents(dataSource, account.id, random);
        created.push({ accountId: account.id, name, apiKey: key.apiKey, agents: agents.length, calls });
        plan.push({ accountId: account.id, agents, calls });
      }
    } finally {
      await dataSource.destroy();
    }
    const started = Date.now();
    await insertCalls(database.url, plan, random);
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `Inserted ${options.calls.toLocaleString('en')} calls in ${seconds.toFixed(1)} s (random seed ${options.randomSeed}).\n`,
    );
    for (const account of created.slice(0, 10)) {
      process.stderr.write(
        `  account ${account.accountId}  ${account.calls.toLocaleString('en').padStart(9)} calls  X-Api-Key: ${account.apiKey}\n`,
      );
    }
    if (created.length > 10) process.stderr.write(`  … and ${created.length - 10} more accounts (all keys in the JSON below)\n`);
    process.stdout.write(`${JSON.stringify({ randomSeed: options.randomSeed, seconds, accounts: created })}\n`);
  } finally {
    await database.stop();
  }
}

if (require.main === module) {
  main().catch((error: Error) => {
    process.stderr.write(
      `${error.message}\n${error instanceof UsageError ? 'Usage: npm run seed -- --accounts N --calls M [--hot-share 0.1] [--random-seed S]\n' : ''}`,
    );
    process.exit(error instanceof UsageError ? 2 : 1);
  });
}
