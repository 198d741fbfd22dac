import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Account } from '../auth/account.entity';
import { Conversation } from '../conversations/conversation.entity';

/**
 * A call through the carrier, beside the conversation it carries (same id): the carrier's CallSid, and the one-time
 * token its media stream presents. Deleting the conversation (an erasure, the account) deletes it.
 */
@Entity('phone_calls')
// The status callbacks find a call by its CallSid.
@Index('IDX_phone_calls_call_sid', ['accountId', 'callSid'], { unique: true })
export class PhoneCall {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'uuid' })
  conversationId: string;

  @ManyToOne(() => Conversation, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'account_id', referencedColumnName: 'accountId' },
    { name: 'conversation_id', referencedColumnName: 'id' },
  ])
  conversation?: Conversation;

  /** The number it was placed from or came to. No foreign key: history, like the conversation's agent. */
  @Column({ type: 'integer' })
  phoneNumberId: number;

  /** The carrier's id of the call (`CA…`); null for an outbound call until the carrier has answered the request. */
  @Column({ type: 'varchar', length: 34, nullable: true })
  callSid: string | null;

  /** SHA-256 of the media stream's one-time token, hex; the token itself is never stored. */
  @Index({ unique: true })
  @Column({ type: 'char', length: 64 })
  streamTokenHash: string;

  /** After this the token opens nothing. */
  @Column({ type: 'timestamptz' })
  streamTokenExpiresAt: Date;

  /** When the token was taken by a stream (then it opens nothing more). */
  @Column({ type: 'timestamptz', nullable: true })
  streamConnectedAt: Date | null;

  /** When the carrier said the call was answered (`in-progress`). */
  @Column({ type: 'timestamptz', nullable: true })
  answeredAt: Date | null;

  @CreateDateColumn({ type: 'timestamptz' })
  createdAt: Date;
}

/**
 * Each status the carrier reported for a call, once (a repeated callback changes nothing): kept by CallSid alone,
 * since a status can come before the carrier's answer to the request that placed the call gives the service that
 * CallSid. What to do about a call is decided from all of its statuses, in whatever order they came.
 */
@Entity('phone_call_statuses')
export class PhoneCallStatus {
  @PrimaryColumn({ type: 'integer' })
  accountId: number;

  @PrimaryColumn({ type: 'varchar', length: 34 })
  callSid: string;

  @PrimaryColumn({ type: 'varchar', length: 20 })
  status: string;

  @ManyToOne(() => Account, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'account_id' })
  account?: Account;

  /** `CallDuration` of a final status, in seconds; null when not given. */
  @Column({ type: 'integer', nullable: true })
  durationSeconds: number | null;

  @CreateDateColumn({ type: 'timestamptz' })
  receivedAt: Date;
}
