import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../auth/account.entity';
import type { TurnLatency } from '../calls/call.entity';

export const CONVERSATION_CHANNELS = ['web-widget', 'api', 'phone'] as const;
export type ConversationChannel = (typeof CONVERSATION_CHANNELS)[number];
/** The call's `callType`: `web` for a widget or API conversation, a phone call's direction otherwise. */
export type ConversationCallType = 'web' | 'inbound' | 'outbound';
export type ConversationStatus = 'active' | 'ended';
/** `tool`: what a tool the model called did (contract section 18), between the visitor's message and the reply. */
export type MessageSpeaker = 'agent' | 'user' | 'tool';

/**
 * A conversation with an agent (a widget visitor's, or the dashboard's test call). All of its state is
 * here, so any instance serves any of its messages. Primary key (account_id, id) like calls; the bearer
 * routes find it by id alone (IDX_conversations_id: ids are random UUIDs) and then compare the token's hash.
 */
@Entity('conversations')
@Index('IDX_conversations_id', ['id'], { unique: true })
@Index('IDX_conversations_active_idle', ['lastMessageAt'], { where: `"status" = 'active'` })
// The caps on active conversations count an account's, and one of its sites' (ConversationsRepository.countActive).
@Index('IDX_conversations_active_site', ['accountId', 'siteId'], { where: `"status" = 'active'` })
export class Conversation {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  /** Also the id of the call it becomes. */
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** SHA-256 of the bearer token, hex; the token itself is never stored. */
  @Column({ type: 'char', length: 64 })
  tokenHash: string;

  /** No foreign key: like a call, the conversation keeps its agent's id and name as history. */
  @Column({ type: 'integer' })
  agentId: number;

  /** The agent's name and language when the conversation started (the call's `agent` and `replyLanguage`). */
  @Column({ type: 'varchar', length: 200 })
  agentName: string;

  @Column({ type: 'varchar', length: 10 })
  replyLanguage: string;

  /** The agent version it runs, chosen when it started (null: the agent's current settings). No foreign key: history. */
  @Column({ type: 'integer', nullable: true })
  agentVersion: number | null;

  @Column({ type: 'varchar', length: 20 })
  channel: ConversationChannel;

  @Column({ type: 'varchar', length: 20, default: 'web' })
  callType: ConversationCallType;

  /** The host of the page that started a widget conversation; "" otherwise. */
  @Column({ type: 'varchar', length: 2048, default: '' })
  website: string;

  /** The widget site it started on; null for API conversations (and those started before it was kept). No foreign key: history. */
  @Column({ type: 'integer', nullable: true })
  siteId: number | null;

  /** The site's allowedDomain when a widget conversation started (its CORS rule); null for API conversations. */
  @Column({ type: 'varchar', length: 260, nullable: true })
  allowedDomain: string | null;

  @Column({ type: 'varchar', length: 200, default: '' })
  name: string;

  @Column({ type: 'varchar', length: 50, default: '' })
  phone: string;

  @Column({ type: 'boolean', default: false })
  isTest: boolean;

  @Column({ type: 'varchar', length: 10, default: 'active' })
  status: ConversationStatus;

  /** Messages so far (the next one's `seq`), and how many of them the visitor sent. */
  @Column({ type: 'integer', default: 0 })
  messageCount: number;

  @Column({ type: 'integer', default: 0 })
  visitorMessageCount: number;

  /** Set while a reply is being produced (one at a time); a stale value (its instance died) expires. */
  @Column({ type: 'timestamptz', nullable: true })
  replyingSince: Date | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  startedAt: Date;

  /** The last message's time (the start until then): idleness is measured from it. */
  @Column({ type: 'timestamptz', default: () => 'now()' })
  lastMessageAt: Date;

  @Column({ type: 'timestamptz', nullable: true })
  endedAt: Date | null;

  /** The voice socket that holds the conversation (one at a time, any instance), and until when its lease runs. */
  @Column({ type: 'uuid', nullable: true })
  voiceLeaseId: string | null;

  @Column({ type: 'timestamptz', nullable: true })
  voiceLeaseUntil: Date | null;

  /** The lease's socket has closed and its call is being stored: a new socket waits for the lease (no 4409). */
  @Column({ default: false })
  voiceLeaseClosing: boolean;
}

/** One message of a conversation, in order (`seq`). */
@Entity('conversation_messages')
export class ConversationMessage {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'uuid' })
  conversationId: string;

  @PrimaryColumn({ type: 'integer' })
  seq: number;

  /** Deleting a conversation (its account's deletion) deletes its messages. */
  @ManyToOne(() => Conversation, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'conversation_id', referencedColumnName: 'id' },
  ])
  conversation?: Conversation;

  @Column({ type: 'varchar', length: 10 })
  speaker: MessageSpeaker;

  @Column({ type: 'text' })
  text: string;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at: Date;

  /** Where it starts in the recording of a spoken conversation, in seconds; null for a message typed or not recorded. */
  @Column({ type: 'double precision', nullable: true })
  startSeconds: number | null;

  /** An agent's reply to a spoken turn: where the turn's time went (TurnLatency); null for every other message. */
  @Column({ type: 'jsonb', nullable: true })
  latencyMs: TurnLatency | null;
}
