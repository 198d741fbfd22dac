/**
 * The benchmark's scenarios: what each request looks like. Values that vary per request (call ids, search
 * terms) are drawn from samples of the hot account's data, with a seeded generator so that the service
 * and the baseline receive the same sequence.
 */
import { Client } from 'pg';

export interface Samples {
  callIds: string[];
  nameTerms: string[];
  phoneTerms: string[];
  status: string;
}

export interface Scenario {
  name: string;
  description: string;
  /** Read scenarios carry the targets (throughput and p99 against the baseline). */
  read: boolean;
  /** A fresh generator of request paths (reads): each run gets the same sequence. */
  paths?: () => () => string;
}

/** mulberry32. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function cycle<T>(items: T[], seed: number): () => T {
  const random = seededRandom(seed);
  return () => items[Math.floor(random() * items.length)];
}

/** Substrings of 3–5 characters (code points, no spaces) of caller names, and 5–6 digit runs of phone numbers. */
export async function loadSamples(client: Client, accountId: number): Promise<Samples> {
  const random = seededRandom(42);
  const ids = await client.query<{ id: string }>(
    'SELECT id FROM calls WHERE account_id = $1 AND NOT is_test ORDER BY md5(id::text) LIMIT 2000',
    [accountId],
  );
  const names = await client.query<{ name: string }>(
    `SELECT DISTINCT name FROM calls WHERE account_id = $1 AND NOT is_test AND name <> '' ORDER BY name`,
    [accountId],
  );
  const phones = await client.query<{ phone: string }>(
    `SELECT phone FROM calls WHERE account_id = $1 AND NOT is_test AND phone <> '' ORDER BY md5(id::text) LIMIT 500`,
    [accountId],
  );
  const nameTerms = new Set<string>();
  for (let attempt = 0; nameTerms.size < 200 && attempt < 10_000; attempt++) {
    const name = [...names.rows[Math.floor(random() * names.rows.length)].name];
    const length = 3 + Math.floor(random() * 3);
    if (name.length < length) continue;
    const start = Math.floor(random() * (name.length - length + 1));
    const term = name.slice(start, start + length).join('');
    if (!/\s/.test(term)) nameTerms.add(term);
  }
  const phoneTerms = new Set<string>();
  for (const { phone } of phones.rows) {
    const digits = phone.replace(/[^0-9]/g, '');
    const length = 5 + Math.floor(random() * 2);
    if (digits.length < length) continue;
    const start = Math.floor(random() * (digits.length - length + 1));
    phoneTerms.add(digits.slice(start, start + length));
  }
  return { callIds: ids.rows.map((row) => row.id), nameTerms: [...nameTerms], phoneTerms: [...phoneTerms], status: 'qualified' };
}

const constant = (path: string) => () => () => path;

/**
 * The read scenarios. `mergeSearch` (quick mode, to stay under three minutes) makes the two search scenarios
 * one, alternating a name term and a phone term.
 */
export function readScenarios(samples: Samples, { mergeSearch = false } = {}): Scenario[] {
  const from = (items: string[], seed: number, path: (item: string) => string) => () => {
    const next = cycle(items, seed);
    return () => path(next());
  };
  const nameSearch = from(samples.nameTerms, 2, (term) => `/calls?search=${encodeURIComponent(term)}`);
  const phoneSearch = from(samples.phoneTerms, 3, (term) => `/calls?search=${term}`);
  const search: Scenario[] = mergeSearch
    ? [
        {
          name: 'search',
          description: 'GET /calls?search=<3–5 characters of a name, or 5–6 phone digits> (alternately)',
          read: true,
          paths: () => {
            const [names, phones] = [nameSearch(), phoneSearch()];
            let turn = 0;
            return () => (turn++ % 2 === 0 ? names() : phones());
          },
        },
      ]
    : [
        { name: 'search-name', description: 'GET /calls?search=<3–5 characters of a name>', read: true, paths: nameSearch },
        { name: 'search-phone', description: 'GET /calls?search=<5–6 phone digits>', read: true, paths: phoneSearch },
      ];
  return [
    { name: 'list', description: 'GET /calls (200 rows, hot account)', read: true, paths: constant('/calls') },
    ...search,
    {
      name: 'recent-by-status',
      description: `GET /calls?days=7&status=${samples.status}`,
      read: true,
      paths: constant(`/calls?days=7&status=${samples.status}`),
    },
    {
      name: 'get-by-id',
      description: 'GET /calls/{id} (random ids of the hot account)',
      read: true,
      paths: from(samples.callIds, 1, (id) => `/calls/${id}`),
    },
    { name: 'agents-list', description: 'GET /agents (50 agents)', read: true, paths: constant('/agents') },
  ];
}

/**
 * Not one of the scenarios: the cost of the stack itself. GET /voices is the key check and a
 * 12-item static list, no query besides the key's (which the service answers from its cache).
 */
export const FLOOR_SCENARIO: Scenario = {
  name: 'stack-floor',
  description: 'GET /voices (key check + static JSON: the stack floor)',
  read: false,
  paths: constant('/voices'),
};

export const WRITE_SCENARIO: Scenario = {
  name: 'agents-create-patch',
  description: 'POST /agents then PATCH it (each a request)',
  read: false,
};

/** Name prefix of the agents the write scenario creates (deleted after the run). */
export const BENCH_AGENT_PREFIX = 'Bench agent';
