import { ApiProperty } from '@nestjs/swagger';
import { UsageAgentRow, UsageDayRow } from '../usage.repository';

/** The calls of one UTC day: test calls never count. */
export class UsageDayResponse {
  /** The UTC day. @example "2026-11-22" */
  @ApiProperty({ format: 'date' })
  date: string;
  /** @example 42 */
  @ApiProperty({ type: 'integer' })
  calls: number;
  /** Sum of the calls' durationSeconds. @example 3990 */
  durationSeconds: number;
  /** Sum of the calls' creditsUsed (each call's credits rounded to 2 decimals, as `GET /calls/{callId}` shows them). @example 66.5 */
  creditsUsed: number;
}

/** The calls one agent handled in the range: test calls never count. */
export class UsageAgentResponse {
  /** The agent's id (kept after it is deleted); null for the calls without an agent. @example 42 */
  @ApiProperty({ type: 'integer', nullable: true })
  agentId: number | null;
  /** The agent's name; once it is deleted, the name on its latest call in the range; "" without an agent. @example "Reception desk" */
  agent: string;
  /** @example 42 */
  @ApiProperty({ type: 'integer' })
  calls: number;
  /** @example 3990 */
  durationSeconds: number;
  /** @example 66.5 */
  creditsUsed: number;
}

export function toUsageDayResponse(row: UsageDayRow): UsageDayResponse {
  return { date: row.date, calls: row.calls, durationSeconds: row.durationSeconds, creditsUsed: row.creditsUsed };
}

export function toUsageAgentResponse(row: UsageAgentRow): UsageAgentResponse {
  return { agentId: row.agentId, agent: row.agent, calls: row.calls, durationSeconds: row.durationSeconds, creditsUsed: row.creditsUsed };
}

/** A row of either grouping (a day has its `date`, an agent's row has none). */
export function toUsageResponse(row: UsageDayRow | UsageAgentRow): UsageDayResponse | UsageAgentResponse {
  return 'date' in row ? toUsageDayResponse(row) : toUsageAgentResponse(row);
}
