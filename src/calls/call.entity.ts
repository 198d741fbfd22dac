import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { Account } from '../auth/account.entity';

export const TRANSCRIPT_SPEAKERS = ['agent', 'user', 'tool'] as const;
export type TranscriptSpeaker = (typeof TRANSCRIPT_SPEAKERS)[number];

/** How a call ended (contract section 17), on the call's detail; "" for calls posted without one and those made before. */
export const ENDED_REASONS = [
  'caller-hung-up',
  'agent-hung-up',
  'transferred',
  'visitor-ended',
  'idle-timeout',
  'max-duration',
  'busy',
  'no-answer',
  'failed',
  'error',
] as const;
export type EndedReason = (typeof ENDED_REASONS)[number];

/**
 * Where the time of one spoken turn went, in milliseconds to a tenth (contract section 19): the silence the turn
 * detector waited for (audio time), the speech-to-text request, the model's first token after the message was
 * accepted, the synthesizer's first audio after its request, and `total`, the visitor's last sound to the agent's
 * first audio sent (the silence waited included). A typed message's turn has no silence and no transcription (0).
 */
export interface TurnLatency {
  endOfTurn: number;
  transcription: number;
  firstToken: number;
  firstAudio: number;
  total: number;
}

/**
 * A spoken call's turns (those with a `latencyMs`) summed up by their `total`: how many, the median and the 90th
 * percentile (nearest rank) and the slowest. A spoken call without a timed turn has `turns: 0` and null figures.
 */
export interface CallLatency {
  turns: number;
  p50Ms: number | null;
  p90Ms: number | null;
  maxMs: number | null;
}

/** One transcript entry. */
export interface TranscriptTurn {
  speaker: TranscriptSpeaker;
  text: string;
  /** Where it starts in the call's recording, in seconds: spoken calls only (contract section 15). */
  startSeconds?: number;
  /** An agent entry answering a spoken turn whose first audio was sent: where its time went (contract section 19). */
  latencyMs?: TurnLatency;
}

/**
 * A call handled by an agent. The primary key is (account_id, id) so that even the by-id lookup goes
 * through an index that leads with the account.
 *
 * Indexes written by hand in the migration (TypeORM cannot express them; `synchronize: false` keeps the
 * drift check from dropping them), every one leading with account_id:
 * - the list, in API order, without test calls: (account_id, call_date DESC, id DESC) WHERE NOT is_test;
 * - the agentId filter: (account_id, agent_id, call_date DESC, id DESC) WHERE NOT is_test;
 * - search: one GIN index (btree_gin + pg_trgm) on (account_id, name, phone, digits of the phone);
 * - search around an Indic virama or nukta: a GIN index on (account_id, the name's search key), with a
 *   statistics object on the key (src/calls/name-search-key.ts);
 * - usage (`GET /usage`): (account_id, call_date) INCLUDE (agent_id, duration_seconds) WHERE NOT is_test, so that
 *   a year of calls is added up from the index alone.
 */
@Entity('calls')
@Index('IDX_calls_account_list', { synchronize: false })
@Index('IDX_calls_account_agent', { synchronize: false })
@Index('IDX_calls_account_search', { synchronize: false })
@Index('IDX_calls_account_name_key', { synchronize: false })
@Index('IDX_calls_account_usage', { synchronize: false })
export class Call {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  /** gen_random_uuid() in the migration. */
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** No foreign key: a call keeps its agent's id and name as history after the agent is deleted. */
  @Column({ type: 'integer', nullable: true })
  agentId: number | null;

  @Column({ type: 'varchar', length: 200, default: '' })
  agentName: string;

  /** The agent version that answered (src/agent-versions); null when none (the agent had none, a test, a posted call). */
  @Column({ type: 'integer', nullable: true })
  agentVersion: number | null;

  @Column({ type: 'varchar', length: 200, default: '' })
  name: string;

  @Column({ type: 'varchar', length: 50, default: '' })
  phone: string;

  @Column({ type: 'varchar', length: 320, default: '' })
  email: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  status: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  callStatus: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  sentiment: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  channel: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  callType: string;

  @Column({ type: 'varchar', length: 2048, default: '' })
  website: string;

  @Column({ type: 'varchar', length: 100, default: '' })
  replyLanguage: string;

  /**
   * Stored to the millisecond, the precision of the API's timestamps (and of a JS Date): the order clients see
   * (callDate, then id) is then exactly the order of the rows, and a paging cursor made of a callDate they saw
   * is exact. Any writer's value is rounded to the millisecond by PostgreSQL.
   */
  @Column({ type: 'timestamptz', precision: 3, default: () => 'now()' })
  callDate: Date;

  @Column({ type: 'double precision', default: 0 })
  durationSeconds: number;

  /** Any JSON value, or null. */
  @Column({ type: 'jsonb', nullable: true })
  feedback: unknown;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  extractedData: Record<string, unknown>;

  @Column({ type: 'jsonb', default: () => "'[]'" })
  transcript: TranscriptTurn[];

  /** How it ended (ENDED_REASONS), or "": shown on the detail only. */
  @Column({ type: 'varchar', length: 20, default: '' })
  endedReason: EndedReason | '';

  /**
   * Its turns' latency (CallLatency), computed once as the call is made from its conversation; null for a call that was
   * not spoken (a text conversation, a call posted through the API, a call made before it was kept).
   */
  @Column({ type: 'jsonb', nullable: true })
  latency: CallLatency | null;

  /** Test calls from the dashboard's test-call button: readable by id, never listed. */
  @Column({ type: 'boolean', default: false })
  isTest: boolean;

  /** Storage key of the audio, owned by the recordings module. Never part of a response. */
  @Column({ type: 'varchar', length: 1024, nullable: true })
  recordingKey: string | null;
}
