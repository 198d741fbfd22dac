import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { AccountQuery } from '../database/query.decorator';
import { creditHundredthsSql, durationMillisecondsSql, rateUnits } from '../calls/credits';

/** The totals of one group of calls. */
export interface UsageTotals {
  calls: number;
  durationSeconds: number;
  creditsUsed: number;
}

/** One UTC day (`YYYY-MM-DD`) of the range; a day without calls has zeros. */
export interface UsageDayRow extends UsageTotals {
  date: string;
}

/** One agent's calls in the range; agentId null for the calls without an agent. */
export interface UsageAgentRow extends UsageTotals {
  agentId: number | null;
  /** The agent's name now, or the name on its latest call in the range once the agent is deleted. */
  agent: string;
}

/** Which calls count: the account's, not test calls, from the first day's 00:00 UTC to before the day after the last. */
export interface UsageRange {
  /** First day, `YYYY-MM-DD`. */
  from: string;
  /** Last day, `YYYY-MM-DD`, included. */
  to: string;
}

/**
 * The calls of the range, read from the usage index alone (IDX_calls_account_usage: account, call date, and the
 * agent and duration included, so no table row is read). $1 account, $2 and $3 the range's bounds as instants.
 */
const CALLS_IN_RANGE = `FROM calls WHERE account_id = $1 AND NOT is_test AND call_date >= $2 AND call_date < $3`;
/**
 * A group's totals, in integers until the end: the duration to the millisecond, and the credits as the sum of
 * each call's credits exactly as `GET /calls/{callId}` rounds them (src/calls/credits.ts; $4 the rate in units).
 */
const TOTALS = `count(*)::int AS calls,
  coalesce(sum(${durationMillisecondsSql('duration_seconds')}) / 1000, 0)::float8 AS "durationSeconds",
  coalesce(sum(${creditHundredthsSql('duration_seconds', '$4')}) / 100, 0)::float8 AS "creditsUsed"`;

/** The range's bounds as instants: the first day's midnight UTC, and the midnight after the last day. */
function bounds({ from, to }: UsageRange): [Date, Date] {
  const end = new Date(`${to}T00:00:00Z`);
  end.setUTCDate(end.getUTCDate() + 1);
  return [new Date(`${from}T00:00:00Z`), end];
}

/**
 * Per UTC day: the statement and its values. Each day's calls are one range of the index, added up on their own
 * (a LATERAL subquery per day): cheaper than converting every call's date to a UTC day and hashing it, and the
 * days without calls come out as zeros by themselves. Days are 24 hours, never the session time zone's days.
 * Exported for bench/integrators.ts (EXPLAIN of what the API runs).
 */
export function usageByDayStatement(accountId: number, range: UsageRange, creditsPerMinute: number): [string, unknown[]] {
  return [
    `SELECT to_char(days.start AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, totals.calls, totals."durationSeconds", totals."creditsUsed"
       FROM generate_series($2::timestamptz, $3::timestamptz - interval '24 hours', interval '24 hours') AS days (start)
       CROSS JOIN LATERAL (
         SELECT ${TOTALS} FROM calls
          WHERE account_id = $1 AND NOT is_test AND call_date >= days.start AND call_date < days.start + interval '24 hours'
       ) AS totals
      ORDER BY days.start`,
    [accountId, ...bounds(range), rateUnits(creditsPerMinute)],
  ];
}

/** Per agent: the statement and its values. Exported for bench/integrators.ts. */
export function usageByAgentStatement(accountId: number, range: UsageRange, creditsPerMinute: number): [string, unknown[]] {
  return [
    `SELECT totals.agent_id AS "agentId", coalesce(agents.name, latest.agent_name, '') AS agent,
            totals.calls, totals."durationSeconds", totals."creditsUsed"
       FROM (SELECT agent_id, ${TOTALS} ${CALLS_IN_RANGE} GROUP BY agent_id) AS totals
       LEFT JOIN agents ON agents.account_id = $1 AND agents.id = totals.agent_id
       -- A deleted agent: the name its latest call in the range recorded (one probe of IDX_calls_account_agent).
       LEFT JOIN LATERAL (
         SELECT agent_name FROM calls
          WHERE agents.id IS NULL AND account_id = $1 AND agent_id = totals.agent_id AND NOT is_test AND call_date >= $2 AND call_date < $3
          ORDER BY call_date DESC, id DESC LIMIT 1
       ) AS latest ON true
      ORDER BY totals.agent_id NULLS LAST`,
    [accountId, ...bounds(range), rateUnits(creditsPerMinute)],
  ];
}

const EXAMPLE_RANGE: UsageRange = { from: '2026-10-24', to: '2026-11-22' };

/** Usage of the calls table, aggregated. Account id first, in every WHERE. */
@Injectable()
export class UsageRepository {
  constructor(private readonly db: Database) {}

  /** Every day of the range, oldest first, with zeros for the days without calls. */
  @AccountQuery([1, EXAMPLE_RANGE, 1])
  byDay(accountId: number, range: UsageRange, creditsPerMinute: number): Promise<UsageDayRow[]> {
    return this.db.query<UsageDayRow>(...usageByDayStatement(accountId, range, creditsPerMinute));
  }

  /** The agents that handled calls in the range, by id (the calls without an agent last). */
  @AccountQuery([1, EXAMPLE_RANGE, 1])
  byAgent(accountId: number, range: UsageRange, creditsPerMinute: number): Promise<UsageAgentRow[]> {
    return this.db.query<UsageAgentRow>(...usageByAgentStatement(accountId, range, creditsPerMinute));
  }
}
